-- session_event: a session's events, appended to the user's outbox in the script of the change
-- (--#include session_event; docs/EVENTS.md). The outbox <prefix>:v1:evoutbox:{<userTag>} is
-- the script's last key and the envelope (events.Envelope with the user's tag and the
-- session's idPart, '' for a script of several sessions) its last argument, after its own.
-- With session events off (GATEWAY_SESSION_EVENTS) the envelope is empty and the outbox is not
-- among the keys.
--#include event_append
local SESSION_ENV = event_env(ARGV[#ARGV])
-- session_id(part) is the id of the user's session part.
local function session_id(part)
  return 's_' .. SESSION_ENV.tag .. '_' .. part
end
-- session_event(typ, part, data) appends typ about the session part (nil: the envelope's) of
-- the user, data with the user's tag, at Redis's time; nothing when session events are off
-- (an empty envelope, and no outbox among the keys).
local function session_event(typ, part, data)
  if ARGV[#ARGV] == '' then
    return nil
  end
  local t = redis.call('TIME')
  local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  data.userTag = SESSION_ENV.tag
  part = part or SESSION_ENV.part
  return event_append(KEYS[#KEYS], SESSION_ENV, now, typ, session_id(part), data)
end
-- session_actor_self(part) is whether the caller is the session part itself (a logout, a
-- sign-out of the other devices), not a service with a token.
local function session_actor_self(part)
  return SESSION_ENV.actor == 'session:' .. session_id(part or SESSION_ENV.part)
end
-- session_ended() appends the end of the script's session: logged out when the caller is the
-- session itself, else revoked (reason revoke).
local function session_ended()
  if session_actor_self() then
    session_event('session.logged_out', nil, {})
  else
    session_event('session.revoked', nil, {reason = 'revoke'})
  end
end
