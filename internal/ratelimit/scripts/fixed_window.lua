-- fixed_window.lua: count one attempt in a fixed-window counter and say whether it is allowed.
-- KEYS[1]: the counter, <prefix>:v1:rl:{<tag>}:<purpose> (a hash: windowStartMs, count,
--          schemaVersion, createdAtMs, updatedAtMs)
-- ARGV[1]: window in milliseconds
-- ARGV[2]: buffer in milliseconds (the key lives window + buffer from the window's first attempt)
-- ARGV[3]: limit (attempts allowed per window)
-- Reply: {allowed (1|0), count in this window after the call, milliseconds until the window ends}
--
-- The window starts are aligned to multiples of the window on the server's clock
-- (redis.call('TIME')), so every gateway replica agrees. A refused attempt is not counted, so
-- the counter never exceeds the limit. The function between the BEGIN and END markers is
-- copied verbatim into every script that counts attempts atomically with other work
-- (internal/repo/scripts/session_verify.lua); repo's TestVerifyScriptEmbedsFixedWindow fails on
-- any drift. The copy is deliberate, the lesser evil: Lua cannot import, and splicing this
-- snippet in from Go at init would make session_verify.lua an incomplete file whose SHA differs
-- from what repo.ScriptBodies preloads, breaking the "every scripts/*.lua is a whole, loadable,
-- reviewable script" rule. Change both copies together.

-- BEGIN fixed_window
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
-- END fixed_window

local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local allowed, n, reset = fixed_window(KEYS[1], now, tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]))
return {allowed, n, reset}
