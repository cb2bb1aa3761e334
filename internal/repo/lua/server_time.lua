-- server_time: Redis's clock, the one every gateway replica shares (--#include server_time).
-- server_window(ttl) is now in ms (a number), now as a string, and now + ttl ms as a string:
-- the instant a create stamps and the expiry it sets.
local function server_window(ttl)
  local t = redis.call('TIME')
  local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  return now, string.format('%.0f', now), string.format('%.0f', now + ttl)
end
