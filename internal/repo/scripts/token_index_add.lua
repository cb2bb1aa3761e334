-- token_index_add.lua: list a new token in its tenant's index, before its metadata hash is
-- written (so a crash between the two never leaves a live token that List cannot find).
-- Prunes expired members first, refuses a full index, and keeps both index keys' TTL at least
-- as long as the newest member's expiry plus the safety window (TTLs only ever grow).
-- KEYS[1]: tenant index by expiry (ZSET, score expiresAtMs, member tokenId)
-- KEYS[2]: tenant index by id (ZSET, score 0, member tokenId; lexical order = issue order)
--          Both keys carry the tenant's hash tag.
-- ARGV[1]: tokenId
-- ARGV[2]: expiresAtMs
-- ARGV[3]: safety window in ms
-- ARGV[4]: max members per tenant
-- ARGV[5]: max expired members pruned in this call
-- Reply: integer: the index TTL in ms (> 0) on success; -1 when expiresAtMs is not in the
--        future; -2 when the index is full.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local exp = tonumber(ARGV[2])
local safety = tonumber(ARGV[3])
if not exp or exp <= now then
  return -1
end
local old = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now, 'LIMIT', 0, tonumber(ARGV[5]))
if #old > 0 then
  redis.call('ZREM', KEYS[1], unpack(old))
  redis.call('ZREM', KEYS[2], unpack(old))
end
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[4]) then
  return -2
end
redis.call('ZADD', KEYS[1], exp, ARGV[1])
redis.call('ZADD', KEYS[2], 0, ARGV[1])
local ttl = exp - now + safety
for i = 1, 2 do
  if redis.call('PTTL', KEYS[i]) < ttl then
    redis.call('PEXPIRE', KEYS[i], ttl)
  end
end
return ttl
