-- token_put.lua: write a token's metadata hash and its key TTL in one step.
-- The TTL is expiresAtMs - now + safety window, with now from the server clock.
-- KEYS[1]: token metadata hash (tagged with the tokenId)
-- ARGV[1]: expiresAtMs
-- ARGV[2]: safety window in ms
-- ARGV[3..]: field, value pairs (createdAtMs and updatedAtMs are added here)
-- Reply: integer: the key TTL in ms (> 0) on success; -1 when expiresAtMs is not in the
--        future; -2 when the key already exists (nothing is written then).
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local exp = tonumber(ARGV[1])
if not exp or exp <= now then
  return -1
end
if redis.call('EXISTS', KEYS[1]) == 1 then
  return -2
end
local fv = {}
for i = 3, #ARGV do
  fv[#fv + 1] = ARGV[i]
end
fv[#fv + 1] = 'createdAtMs'
fv[#fv + 1] = now
fv[#fv + 1] = 'updatedAtMs'
fv[#fv + 1] = now
redis.call('HSET', KEYS[1], unpack(fv))
local ttl = exp - now + tonumber(ARGV[2])
redis.call('PEXPIRE', KEYS[1], ttl)
return ttl
