-- fixed_window: the rate limiter's counter as a Lua function, put into every script that
-- counts an attempt atomically with other work (--#include fixed_window).
-- fixed_window(key, nowMs, windowMs, bufferMs, limit) → allowed (1|0), count in this window
-- after the call, milliseconds until the window ends. key is a hash (windowStartMs, count,
-- schemaVersion, createdAtMs, updatedAtMs) living window + buffer from the window's first
-- attempt. Window starts are aligned to multiples of the window on the server's clock, so every
-- gateway replica agrees; a refused attempt is not counted, so the count never exceeds limit.
local function fixed_window(key, now, window, buffer, limit)
  local start = now - (now % window)
  local reset = start + window - now
  local nowS = string.format('%d', now)
  local cur = redis.call('HMGET', key, 'windowStartMs', 'count')
  local n = 0
  if cur[1] and tonumber(cur[1]) == start then
    -- A counter that does not parse is treated as exhausted: fail closed.
    n = tonumber(cur[2]) or limit
  end
  if n >= limit then
    return 0, n, reset
  end
  if n == 0 then
    -- schemaVersion mirrors repo.SchemaVersion (a test keeps them equal).
    redis.call('HSET', key, 'windowStartMs', string.format('%d', start), 'count', '1',
      'schemaVersion', '2', 'createdAtMs', nowS, 'updatedAtMs', nowS)
    redis.call('PEXPIRE', key, string.format('%d', window + buffer))
  else
    redis.call('HINCRBY', key, 'count', 1)
    redis.call('HSET', key, 'updatedAtMs', nowS)
  end
  return 1, n + 1, reset
end
