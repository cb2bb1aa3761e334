-- session_event: a session's events, appended in the script of the change to where the
-- layout keeps the user's pending events (docs/EVENTS.md): the per-user layout's scripts
-- include session_event_hash (the user's hash, KEYS[1]), the per-session layout's
-- session_event_stream (the outbox stream <prefix>:v1:evoutbox:{<userTag>}, the script's last
-- key); each defines session_outbox_append(env, now, typ, subject, data) and includes this. The
-- envelope (events.Envelope with the user's tag and the session's idPart, '' for a script of
-- several sessions) is the script's last argument, after its own. With session events off
-- (GATEWAY_SESSION_EVENTS) the envelope is empty (and no outbox stream is among the keys).
--#include event_append
--#include session_clock
local SESSION_ENV = event_env(ARGV[#ARGV])
-- session_id(part) is the id of the user's session part.
local function session_id(part)
  return 's_' .. SESSION_ENV.tag .. '_' .. part
end
-- SESSION_ENDS are the types an envelope marked 'ends' lets through (GATEWAY_SESSION_EVENTS=ends,
-- events.SessionEnds).
local SESSION_ENDS = {['session.revoked'] = true, ['session.logged_out'] = true, ['session.evicted'] = true}
-- session_event(typ, part, data) appends typ about the session part (nil: the envelope's) of
-- the user, data with the user's tag, at Redis's time; nothing when session events are off
-- (an empty envelope), or for a type that ends no session when the envelope asks for the ends.
local function session_event(typ, part, data)
  if ARGV[#ARGV] == '' or SESSION_ENV.only == 'ends' and not SESSION_ENDS[typ] then
    return nil
  end
  local now = session_now()
  data.userTag = SESSION_ENV.tag
  part = part or SESSION_ENV.part
  return session_outbox_append(SESSION_ENV, now, typ, session_id(part), data)
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
