-- session_rotate.lua: give a session a new token. The session keeps its key (its id); its
-- verifierMac is replaced by the new token's, lastRotatedAtMs and updatedAtMs are written, in one
-- atomic step: the old token stops working at once (the write also invalidates every gateway's
-- kept copy), the TTL and the absolute deadline are kept, the device index is unchanged.
-- KEYS[1]: session hash <prefix>:v1:sess:{<userTag>}:<idPart>
-- ARGV[1]: tenant of the caller (another tenant's session answers 'NOT_FOUND')
-- ARGV[2]: the new token's verifier MAC
-- ARGV[3]: the event envelope (session_event)
-- KEYS[2]: the user's event outbox (session_event): session.rotated
-- Reply: {'NOT_FOUND'} |
--        {'OK', nowMs, pttlMs, status, authLevel, createdAtMs, absoluteExpiresAtMs, groups}
--        (status and authLevel nil when the hash does not hold them: ACTIVE and BASIC, the
--        defaults, are not written; rotation keeps both as they are; groups nil when the
--        session has none)

--#include session_clock
--#include session_event_stream

local v = redis.call('HMGET', KEYS[1], 'tenantId', 'status', 'authLevel', 'createdAtMs', 'absoluteExpiresAtMs', 'groups')
if not v[1] or v[1] ~= ARGV[1] then
  return {'NOT_FOUND'}
end
local now, nowS = session_now()
redis.call('HSET', KEYS[1], 'verifierMac', ARGV[2], 'lastRotatedAtMs', nowS, 'updatedAtMs', nowS)
session_event('session.rotated', nil, {})
return {'OK', now, redis.call('PTTL', KEYS[1]), v[2], v[3], v[4], v[5], v[6]}
