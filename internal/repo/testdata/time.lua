-- time.lua: the server's clock in milliseconds, for tests only (never preloaded in production).
-- KEYS: none
-- ARGV: none
-- Reply: integer, milliseconds since the epoch from redis.call('TIME').
local t = redis.call('TIME')
return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
