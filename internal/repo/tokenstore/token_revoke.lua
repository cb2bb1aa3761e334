-- token_revoke.lua: revoke a token and every token minted from it, transitively, in one atomic
-- step. The caller reads the descendants first (the children sets, level by level) and passes
-- every key here, so the script touches only declared keys, all under the tenant's hash tag.
-- A child that was not passed (minted since the caller's read) makes the script answer
-- 'RETRY' without changing anything. The hashes keep their TTL (HSET on an existing key); a
-- missing key is never created; the children sets are kept until they expire (a revoked token
-- mints nothing more, and its lineage stays listable by the tokens above it). Each token
-- revoked now gets its token.revoked event in the tenant's stream, in this same step.
-- KEYS[1]: the token's metadata hash
-- KEYS[2..n+1]: the metadata hashes of its n descendants
-- KEYS[n+2..2n+2]: the children sets of the token and of each descendant, in the same order
-- KEYS[2n+3]: the tenant's event stream
-- ARGV[1]: the caller's tenant id
-- ARGV[2]: revokedReason of the token
-- ARGV[3]: revokedReason of the descendants (names the token)
-- ARGV[4]: the event envelope (events.Envelope), ARGV[5]: the token's id
-- ARGV[6..n+5]: the descendants' ids, in the order of KEYS[2..n+1]
-- Reply: {'NOT_FOUND'} no such token of this tenant (nothing written) | {'ALREADY'}
--        revoked before (first revocation kept; its descendants were revoked with it) |
--        {'RETRY'} | {'OK', id...} revoked now, with the ids of the descendants revoked now
--#include event_append

local n = #ARGV - 5
if #KEYS ~= 2 * n + 3 then
  return redis.error_reply('token_revoke: key count does not match the descendants')
end
local st = redis.call('HMGET', KEYS[1], 'tenantId', 'revoked')
if st[1] ~= ARGV[1] then
  return {'NOT_FOUND'}
end
if st[2] == '1' then
  return {'ALREADY'}
end
local passed = {}
for i = 1, n do
  passed[ARGV[5 + i]] = true
end
for j = 0, n do
  local kids = redis.call('SMEMBERS', KEYS[n + 2 + j])
  for _, k in ipairs(kids) do
    if not passed[k] then
      return {'RETRY'}
    end
  end
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('HSET', KEYS[1], 'revoked', '1', 'revokedAtMs', now, 'revokedReason', ARGV[2], 'updatedAtMs', now)
local env = event_env(ARGV[4])
event_append(KEYS[2 * n + 3], env, now, 'token.revoked', ARGV[5], {reason = ARGV[2]})
local out = {'OK'}
for i = 1, n do
  if redis.call('HGET', KEYS[1 + i], 'revoked') == '0' then
    redis.call('HSET', KEYS[1 + i], 'revoked', '1', 'revokedAtMs', now, 'revokedReason', ARGV[3], 'updatedAtMs', now)
    out[#out + 1] = ARGV[5 + i]
    event_append(KEYS[2 * n + 3], env, now, 'token.revoked', ARGV[5 + i], {reason = ARGV[3], cascadeFrom = ARGV[5]})
  end
end
return out
