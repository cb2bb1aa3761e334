-- window_add.lua: add requests a gateway replica has already admitted to a fixed-window counter,
-- and answer the window's total, so the replica learns what every replica together admitted.
-- KEYS[1]: the counter, <prefix>:v1:rl:{<tag>}:<policy> (a hash: windowStartMs, count,
--          schemaVersion, createdAtMs, updatedAtMs; the same shape as fixed_window.lua's)
-- ARGV[1]: the window's start, Unix ms on the server's clock as the replica estimates it
-- ARGV[2]: window in milliseconds
-- ARGV[3]: buffer in milliseconds (the key lives until the window's end + buffer)
-- ARGV[4]: how many requests to add (≥ 0; 0 only reads)
-- Reply: {'OK', count in that window after the call, server time in ms}
--
-- A replica counts on its own between flushes (internal/ratelimit/ratesync) and sends what it
-- admitted, batched with its other counters, in the background. The window a count belongs to
-- is the replica's: the counter keeps the newest window it was told of, and an addition for an
-- older window (a flush that arrives after the window turned) is not counted and answers the
-- newer window's total. The key's expiry is absolute (window end + buffer on the server's
-- clock), set with the write that starts the window.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local start, window, buffer, n = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local nowS = string.format('%d', now)
local cur = redis.call('HMGET', KEYS[1], 'windowStartMs', 'count')
local curStart = tonumber(cur[1])
if curStart and curStart > start then
  return {'OK', tonumber(cur[2]) or 0, now}
end
if curStart == start then
  if n == 0 then
    return {'OK', tonumber(cur[2]) or 0, now}
  end
  local total = redis.call('HINCRBY', KEYS[1], 'count', n)
  redis.call('HSET', KEYS[1], 'updatedAtMs', nowS)
  return {'OK', total, now}
end
-- A new window (or no counter yet). Nothing to add: nothing to write.
if n == 0 then
  return {'OK', 0, now}
end
local expireAt = start + window + buffer
if expireAt <= now then
  -- The replica's window already ended on the server's clock: count nothing.
  return {'OK', 0, now}
end
-- schemaVersion mirrors repo.SchemaVersion (a test keeps them equal).
redis.call('HSET', KEYS[1], 'windowStartMs', string.format('%d', start), 'count', string.format('%d', n),
  'schemaVersion', '2', 'createdAtMs', nowS, 'updatedAtMs', nowS)
redis.call('PEXPIREAT', KEYS[1], string.format('%d', expireAt))
return {'OK', n, now}
