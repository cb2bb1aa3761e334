-- token_create.lua: create a token in one atomic step: list it in its tenant's index, write
-- its metadata hash and, for a token minted by another token (its issuer), link it to the
-- issuer, and append token.issued to the tenant's event stream. Every key carries the tenant's
-- hash tag. Nothing is written, the event included, unless every check passes.
-- KEYS[1]: tenant index by expiry (ZSET, score expiresAtMs, member tokenId)
-- KEYS[2]: tenant index by id (ZSET, score 0, member tokenId; lexical order = issue order)
-- KEYS[3]: the new token's metadata hash
-- KEYS[4]: the tenant's event stream
-- KEYS[5]: (minted by a token only) the issuer's metadata hash
-- KEYS[6]: (minted by a token only) the issuer's children set
-- KEYS[7]: (minted by a token only) the lineage root's metadata hash (may equal KEYS[5])
-- ARGV[1]: tokenId
-- ARGV[2]: expiresAtMs
-- ARGV[3]: safety window in ms
-- ARGV[4]: max members per tenant index (the tenant's token quota, GATEWAY_TENANT_MAX_TOKENS)
-- ARGV[5]: max expired members pruned in this call
-- ARGV[6]: tenantId
-- ARGV[7]: (minted by a token) max tokens minted under one root, all generations; else ''
-- ARGV[8]: (minted by a token) the issuer's rootId as the caller read it ('' = the issuer is
--          the root); else ''
-- ARGV[9]: the event envelope (events.Envelope)
-- ARGV[10..]: field, value pairs of the hash (createdAtMs and updatedAtMs are added here)
-- Reply: {'OK', hash TTL in ms} | {'EXPIRED'} expiresAtMs not in the future |
--        {'QUOTA', ms until the earliest live token expires} the tenant's quota is used up |
--        {'BOUND', 'lineage'} the lineage is full |
--        {'ISSUER_GONE', 'not_live'} the issuer is not live (missing, another tenant's, revoked
--        or expired) | {'ISSUER_GONE', 'lineage_changed'} the issuer's lineage changed since it
--        was read | {'OUTLIVES_ISSUER'} the token would outlive its issuer | {'EXISTS'} the id
--        exists already
--#include event_append

local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local exp = tonumber(ARGV[2])
local safety = tonumber(ARGV[3])
if not exp or exp <= now then
  return {'EXPIRED'}
end
if redis.call('EXISTS', KEYS[3]) == 1 then
  return {'EXISTS'}
end
local child = #KEYS >= 7
if child then
  local p = redis.call('HMGET', KEYS[5], 'tenantId', 'revoked', 'expiresAtMs', 'rootId')
  if p[1] ~= ARGV[6] or p[2] ~= '0' or not tonumber(p[3]) or tonumber(p[3]) <= now then
    return {'ISSUER_GONE', 'not_live'}
  end
  if exp > tonumber(p[3]) then
    return {'OUTLIVES_ISSUER'}
  end
  if (p[4] or '') ~= ARGV[8] then
    return {'ISSUER_GONE', 'lineage_changed'}
  end
  local n = tonumber(redis.call('HGET', KEYS[7], 'lineageCount') or '0') or 0
  if n >= tonumber(ARGV[7]) then
    return {'BOUND', 'lineage'}
  end
end
local old = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now, 'LIMIT', 0, tonumber(ARGV[5]))
if #old > 0 then
  redis.call('ZREM', KEYS[1], unpack(old))
  redis.call('ZREM', KEYS[2], unpack(old))
end
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[4]) then
  local first = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
  return {'QUOTA', math.max(tonumber(first[2]) - now, 0)}
end
local ttl = exp - now + safety
redis.call('ZADD', KEYS[1], exp, ARGV[1])
redis.call('ZADD', KEYS[2], 0, ARGV[1])
for i = 1, 2 do
  if redis.call('PTTL', KEYS[i]) < ttl then
    redis.call('PEXPIRE', KEYS[i], ttl)
  end
end
local fv = {}
local f = {}
for i = 10, #ARGV, 2 do
  fv[#fv + 1] = ARGV[i]
  fv[#fv + 1] = ARGV[i + 1]
  f[ARGV[i]] = ARGV[i + 1]
end
fv[#fv + 1] = 'createdAtMs'
fv[#fv + 1] = now
fv[#fv + 1] = 'updatedAtMs'
fv[#fv + 1] = now
redis.call('HSET', KEYS[3], unpack(fv))
redis.call('PEXPIRE', KEYS[3], ttl)
if child then
  -- The children set lives as long as its issuer's hash; HINCRBY on the root's existing hash
  -- keeps the root's TTL.
  redis.call('SADD', KEYS[6], ARGV[1])
  local pttl = redis.call('PTTL', KEYS[5])
  if pttl > 0 then
    redis.call('PEXPIRE', KEYS[6], pttl)
  end
  redis.call('HINCRBY', KEYS[7], 'lineageCount', 1)
end
event_append(KEYS[4], event_env(ARGV[9]), now, 'token.issued', ARGV[1],
  {tokenType = f.tokenType, scopes = f.scopes, expiresAtMs = exp, parentId = f.parentId})
return {'OK', ttl}
