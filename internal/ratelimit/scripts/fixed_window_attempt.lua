-- fixed_window_attempt.lua: count one attempt in a fixed-window counter and say whether it is
-- allowed (the kit's fixed_window snippet, internal/repo/lua/fixed_window.lua, run alone: the
-- test harness of the function session_verify.lua and session_u_verify.lua include).
-- KEYS[1]: the counter, <prefix>:v1:rl:{<tag>}:<purpose> (a hash: windowStartMs, count,
--          schemaVersion, createdAtMs, updatedAtMs)
-- ARGV[1]: window in milliseconds
-- ARGV[2]: buffer in milliseconds (the key lives window + buffer from the window's first attempt)
-- ARGV[3]: limit (attempts allowed per window)
-- Reply: {allowed (1|0), count in this window after the call, milliseconds until the window ends}

--#include fixed_window

local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local allowed, n, reset = fixed_window(KEYS[1], now, tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]))
return {allowed, n, reset}
