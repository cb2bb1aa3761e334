-- token_revoke.lua: mark a token revoked, once. The key keeps its TTL (HSET on an existing
-- key does not touch it) and a missing key is never created.
-- KEYS[1]: token metadata hash
-- ARGV[1]: the caller's tenant id
-- ARGV[2]: revokedReason
-- Reply: integer: 1 revoked now; 2 already revoked (first revocation kept); 0 unknown token
--        (nothing written); -1 the token belongs to another tenant (nothing written).
if redis.call('EXISTS', KEYS[1]) == 0 then
  return 0
end
if redis.call('HGET', KEYS[1], 'tenantId') ~= ARGV[1] then
  return -1
end
if redis.call('HGET', KEYS[1], 'revoked') == '1' then
  return 2
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('HSET', KEYS[1], 'revoked', '1', 'revokedAtMs', now, 'revokedReason', ARGV[2], 'updatedAtMs', now)
return 1
