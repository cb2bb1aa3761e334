-- session_clock: session_now() is the time on Redis's clock (TIME) in ms, and as the decimal
-- string the hashes store (--#include session_clock).
local function session_now()
  local t = redis.call('TIME')
  local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  return now, string.format('%d', now)
end
