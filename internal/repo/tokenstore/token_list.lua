-- token_list.lua: one page of a tenant's token ids, newest first, after pruning expired
-- members from both index keys (the read cleans up as it goes).
-- KEYS[1]: tenant index by expiry (ZSET, score expiresAtMs)
-- KEYS[2]: tenant index by id (ZSET, score 0; lexical order of ULID-style ids = issue order)
-- ARGV[1]: cursor: the last tokenId of the previous page, or '' for the first page
-- ARGV[2]: how many ids to return at most
-- ARGV[3]: max expired members pruned in this call
-- Reply: {'OK', tokenId...}: newest first, all strictly older than the cursor.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local old = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now, 'LIMIT', 0, tonumber(ARGV[3]))
if #old > 0 then
  redis.call('ZREM', KEYS[1], unpack(old))
  redis.call('ZREM', KEYS[2], unpack(old))
end
local hi = '+'
if ARGV[1] ~= '' then
  hi = '(' .. ARGV[1]
end
local out = {'OK'}
for _, id in ipairs(redis.call('ZREVRANGEBYLEX', KEYS[2], hi, '-', 'LIMIT', 0, tonumber(ARGV[2]))) do
  out[#out + 1] = id
end
return out
