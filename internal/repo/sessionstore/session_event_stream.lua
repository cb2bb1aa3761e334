-- session_event_stream: session_event for the per-session layout's scripts
-- (--#include session_event_stream): the events go to the user's outbox stream
-- <prefix>:v1:evoutbox:{<userTag>}, the script's last key when session events are on.
--#include event_append
local function session_outbox_append(env, now, typ, subject, data)
  return event_append(KEYS[#KEYS], env, now, typ, subject, data)
end
--#include session_event
