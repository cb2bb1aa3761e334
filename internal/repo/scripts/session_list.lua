-- session_list.lua: the user's live sessions (devices), pruning index members whose session
-- expired or vanished. Reads only the fields the device view shows (never tokenHash).
-- KEYS[1]: device index <prefix>:v1:sessions:{<userTag>}
-- ARGV[1]: session key base <prefix>:v1:session:{<userTag>}: (must carry KEYS[1]'s tag)
-- ARGV[2..]: the field names to read from each session hash
-- Reply: {nowMs, n, then per live session: idPart, pttlMs, value of each field (nil if absent)}
local tag = string.match(KEYS[1], '{[^}]*}')
if not tag or not string.find(ARGV[1], tag, 1, true) then
  return redis.error_reply('ERR session_list: keys must share one hash tag')
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local names = {}
for i = 2, #ARGV do
  names[#names + 1] = ARGV[i]
end
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', string.format('%d', now))
local out = {now, 0}
local n = 0
for _, m in ipairs(redis.call('ZRANGE', KEYS[1], 0, -1)) do
  local key = ARGV[1] .. m
  local pttl = redis.call('PTTL', key)
  if pttl == -2 then
    redis.call('ZREM', KEYS[1], m)
  else
    n = n + 1
    out[#out + 1] = m
    out[#out + 1] = pttl
    local v = redis.call('HMGET', key, unpack(names))
    for i = 1, #names do
      out[#out + 1] = v[i]
    end
  end
end
out[2] = n
return out
