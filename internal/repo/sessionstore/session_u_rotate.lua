-- session_u_rotate.lua: the per-user layout's rotation (docs/KEYS.md, "Sessions"): give a
-- session a new token. The session keeps its id part; "<idPart>:verifierMac" is replaced by the
-- new token's and lastRotatedAtMs and updatedAtMs are written, all with the session's field TTL
-- (what is left of its idle window), in one atomic step: the old token stops working at once,
-- the idle window and the absolute deadline are kept. The hash's updatedAtMs is set.
-- KEYS[1]: the user's hash <prefix>:v1:sess:{<userTag>}
--          (the only key: a single-key script is served while the user's slot migrates)
-- ARGV[1]: tenant of the caller (another tenant's session answers 'NOT_FOUND')
-- ARGV[2]: idPart, ARGV[3]: the new token's verifier MAC
-- Reply: {'NOT_FOUND'} |
--        {'OK', nowMs, pttlMs, status, authLevel, createdAtMs, absoluteExpiresAtMs, groups}
--        (status and authLevel nil when the session does not hold them: ACTIVE and BASIC, the
--        defaults, are not written; rotation keeps both as they are; createdAtMs is the hash's
--        when the session holds none; groups nil when the session has none)

-- Field names, not keys: every key touched is in KEYS.
local part = ARGV[2]
local p = part .. ':'
local v = redis.call('HMGET', KEYS[1], 'tenantId', p .. 'absoluteExpiresAtMs', p .. 'status', p .. 'authLevel',
  p .. 'createdAtMs', 'createdAtMs', p .. 'groups')
if not v[2] or not v[1] or v[1] ~= ARGV[1] then
  return {'NOT_FOUND'}
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local nowS = string.format('%d', now)
local pttl = redis.call('HPTTL', KEYS[1], 'FIELDS', 1, p .. 'absoluteExpiresAtMs')[1]
redis.call('HSET', KEYS[1], p .. 'verifierMac', ARGV[3], p .. 'lastRotatedAtMs', nowS, p .. 'updatedAtMs', nowS,
  'updatedAtMs', nowS)
if pttl > 0 then
  redis.call('HPEXPIRE', KEYS[1], string.format('%d', pttl), 'FIELDS', 3, p .. 'verifierMac', p .. 'lastRotatedAtMs',
    p .. 'updatedAtMs')
end
return {'OK', now, pttl, v[3], v[4], v[5] or v[6], v[2], v[7]}
