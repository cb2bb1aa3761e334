-- session_clock: session_now() is the time on Redis's clock (TIME) in ms, and as the decimal
-- string the hashes store (--#include session_clock); read once per script, so the change and
-- its events (session_event) carry the same instant.
local session_clock_now
local function session_now()
  if not session_clock_now then
    local t = redis.call('TIME')
    session_clock_now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  end
  return session_clock_now, string.format('%d', session_clock_now)
end
