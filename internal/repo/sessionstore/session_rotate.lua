-- session_rotate.lua: give a session a new token. The hash moves to the key derived from the
-- new token (RENAME keeps its TTL, so the absolute deadline is kept), the old token's key no
-- longer exists, and the device index swaps members, all in one atomic step.
-- KEYS[1]: old session hash  <prefix>:v1:sess:{<userTag>}:<oldIdPart>
-- KEYS[2]: new session hash  <prefix>:v1:sess:{<userTag>}:<newIdPart>
-- KEYS[3]: device index      <prefix>:v1:sessions:{<userTag>}
-- KEYS[4]: old challenge key <prefix>:v1:mfa:{<userTag>}:<oldIdPart> (fallback mode only)
-- KEYS[5]: new challenge key <prefix>:v1:mfa:{<userTag>}:<newIdPart>
-- ARGV[1]: tenant of the caller (another tenant's session answers 'NOT_FOUND')
-- ARGV[2]: old idPart, ARGV[3]: new idPart
-- The new key derives from the new token's SHA-256, so no hash of the token is stored.
-- Reply: {'NOT_FOUND'} | {'EXISTS'} |
--        {'OK', nowMs, pttlMs, status, authLevel, createdAtMs, absoluteExpiresAtMs, groups}
--        (status and authLevel nil when the hash does not hold them: ACTIVE and BASIC, the
--        defaults, are not written; rotation keeps both as they are; groups nil when the
--        session has none)
local v = redis.call('HMGET', KEYS[1], 'tenantId', 'status', 'authLevel', 'createdAtMs', 'absoluteExpiresAtMs', 'groups')
if not v[1] or v[1] ~= ARGV[1] then
  return {'NOT_FOUND'}
end
if redis.call('EXISTS', KEYS[2]) == 1 then
  return {'EXISTS'}
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local nowS = string.format('%d', now)
redis.call('HSET', KEYS[1], 'lastRotatedAtMs', nowS, 'updatedAtMs', nowS)
redis.call('RENAME', KEYS[1], KEYS[2])
if redis.call('EXISTS', KEYS[4]) == 1 then
  redis.call('RENAME', KEYS[4], KEYS[5])
end
local pttl = redis.call('PTTL', KEYS[2])
local abs = tonumber(v[5]) or (now + math.max(pttl, 0))
redis.call('ZREM', KEYS[3], ARGV[2])
-- The member's score is its absolute deadline plus half a millisecond: the mark of a member
-- born of a rotation, which a concurrent revoke-all must not leave behind (session_revoke_all.lua).
redis.call('ZADD', KEYS[3], string.format('%d.5', abs), ARGV[3])
if redis.call('PTTL', KEYS[3]) < abs - now then
  redis.call('PEXPIRE', KEYS[3], string.format('%d', math.max(abs - now, 1)))
end
return {'OK', now, pttl, v[2], v[3], v[4], v[5], v[6]}
