-- key_ttl: key_ttl_at_least(key, ms) raises key's TTL to ms milliseconds (at least 1), never
-- shortening it: a key that holds several sessions lives as long as the longest-lived can
-- (--#include key_ttl).
local function key_ttl_at_least(key, ms)
  if redis.call('PTTL', key) < ms then
    redis.call('PEXPIRE', key, string.format('%d', math.max(ms, 1)))
  end
end
