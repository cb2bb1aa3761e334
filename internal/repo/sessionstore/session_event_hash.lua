-- session_event_hash: session_event for the per-user layout's scripts
-- (--#include session_event_hash): the events go into the user's hash KEYS[1], the one key the
-- script writes (the kit's event_outbox), so a session write stays a single-key script that
-- Redis serves while the user's slot migrates.
--#include event_outbox
local function session_outbox_append(env, now, typ, subject, data)
  return event_outbox_append(KEYS[1], env, now, typ, subject, data)
end
--#include session_event
