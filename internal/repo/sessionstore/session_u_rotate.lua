-- session_u_rotate.lua: the per-user layout's rotation (docs/KEYS.md, "Sessions"): give a
-- session a new token. The session keeps its id part; the verifier MAC in "<idPart>:live" is
-- replaced by the new token's and lastRotatedAtMs and updatedAtMs are written, all with the
-- session's field TTL (what is left of its idle window), in one atomic step: the old token
-- stops working at once, the idle window, createdAtMs and the absolute deadline are kept. The
-- hash's updatedAtMs is set.
-- KEYS[1]: the user's hash <prefix>:v1:sess:{<userTag>}, which also takes the event
--          session.rotated (session_event_hash)
-- ARGV[1]: tenant of the caller (another tenant's session answers 'NOT_FOUND')
-- ARGV[2]: idPart, ARGV[3]: the new token's verifier MAC, ARGV[4]: the event envelope
-- Reply: {'NOT_FOUND'} |
--        {'OK', nowMs, pttlMs, status, authLevel, createdAtMs, absoluteExpiresAtMs, groups}
--        (status and authLevel nil when the session does not hold them: ACTIVE and BASIC, the
--        defaults, are not written; rotation keeps both as they are; createdAtMs from the live
--        marker; groups nil when the session has none)

--#include session_part
--#include session_clock
--#include session_event_hash

local p = ARGV[2] .. ':' -- field name prefix
local v, abs, created = part_load(ARGV[1], p, p .. 'status', p .. 'authLevel', p .. 'groups')
if not v then
  return {'NOT_FOUND'}
end
local now, nowS = session_now()
local pttl = part_idle(p)
part_write(pttl, p, nowS, LIVE, live_value(created, ARGV[3], abs), 'lastRotatedAtMs', nowS, 'updatedAtMs', nowS)
session_event('session.rotated', nil, {})
return {'OK', now, pttl, v[3], v[4], string.format('%d', created), string.format('%d', abs), v[5]}
