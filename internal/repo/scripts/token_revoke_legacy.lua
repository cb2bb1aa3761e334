-- token_revoke_legacy.lua: revoke a token whose hash predates the tenant-tagged key
-- (<prefix>:v1:token:{<tokenId>}, written before token lineage; such a token minted nothing
-- that is linked to it). Marks it revoked once; the key keeps its TTL and a missing key is
-- never created.
-- KEYS[1]: the legacy token metadata hash
-- ARGV[1]: the caller's tenant id
-- ARGV[2]: revokedReason
-- Reply: {'OK'} revoked now | {'ALREADY'} (first revocation kept) | {'NOT_FOUND'}
--        unknown, or another tenant's token (nothing written either way).
if redis.call('HGET', KEYS[1], 'tenantId') ~= ARGV[1] then
  return {'NOT_FOUND'}
end
if redis.call('HGET', KEYS[1], 'revoked') == '1' then
  return {'ALREADY'}
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('HSET', KEYS[1], 'revoked', '1', 'revokedAtMs', now, 'revokedReason', ARGV[2], 'updatedAtMs', now)
return {'OK'}
