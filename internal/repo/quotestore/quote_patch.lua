-- quote_patch.lua: merge-patch a DRAFT at an expected stateVersion (compare-and-set), keep
-- totalMinor = subtotalMinor - discountMinor + taxMinor, bump stateVersion, refresh the TTL of
-- both keys and the draft's score in its tenant's quota set.
-- KEYS[1] summary hash  <p>:v1:quote:{<tenantTag>}:<quoteId>
-- KEYS[2] items hash    KEYS[1] .. ':items'
-- KEYS[3] quota set     <p>:v1:quota:{<tenantTag>}:quotes  (member quoteId, score expiresAtMs)
-- ARGV[1] tenantId  ARGV[2] expected stateVersion (If-Match; -1 matches any)  ARGV[3] TTL ms
-- ARGV[4] max amount (2^53-1: Lua numbers are doubles, exact below it)
-- ARGV[5] customerId  ARGV[6] salesChannel  ARGV[7] discountMinor  ARGV[8] taxMinor ('' = unchanged)
-- ARGV[9] quoteId (the member in KEYS[3])
-- Reply: {'OK', HGETALL summary} | {'NOT_FOUND'} | {'STALE', current} | {'INVALID_STATUS', status}
--        | {'DISCOUNT'} | {'OVERFLOW', field} | {'CORRUPT', field}
local s = redis.call('HMGET', KEYS[1], 'tenantId', 'stateVersion', 'status', 'subtotalMinor', 'discountMinor', 'taxMinor')
if not s[1] or s[1] ~= ARGV[1] then
  return {'NOT_FOUND'}
end
local version = tonumber(s[2])
if not version then return {'CORRUPT', 'stateVersion'} end
local want = tonumber(ARGV[2])
if want ~= -1 and version ~= want then return {'STALE', s[2]} end
if s[3] ~= 'DRAFT' then return {'INVALID_STATUS', tostring(s[3])} end
local subtotal = tonumber(s[4])
if not subtotal then return {'CORRUPT', 'subtotalMinor'} end
local discount = tonumber(s[5])
if ARGV[7] ~= '' then discount = tonumber(ARGV[7]) end
local tax = tonumber(s[6])
if ARGV[8] ~= '' then tax = tonumber(ARGV[8]) end
if not discount then return {'CORRUPT', 'discountMinor'} end
if not tax then return {'CORRUPT', 'taxMinor'} end
local max = tonumber(ARGV[4])
if discount > subtotal then return {'DISCOUNT'} end
local total = subtotal - discount + tax
if total > max then return {'OVERFLOW', 'totalMinor'} end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local ttl = tonumber(ARGV[3])
local function n(x) return string.format('%.0f', x) end
redis.call('HINCRBY', KEYS[1], 'stateVersion', 1)
if ARGV[5] ~= '' then redis.call('HSET', KEYS[1], 'customerId', ARGV[5]) end
if ARGV[6] ~= '' then redis.call('HSET', KEYS[1], 'salesChannel', ARGV[6]) end
redis.call('HSET', KEYS[1], 'discountMinor', n(discount), 'taxMinor', n(tax), 'totalMinor', n(total),
  'updatedAtMs', n(now), 'expiresAtMs', n(now + ttl))
redis.call('PEXPIREAT', KEYS[1], n(now + ttl))
redis.call('PEXPIREAT', KEYS[2], n(now + ttl))
-- the draft's place in the quota set follows its new expiry
redis.call('ZADD', KEYS[3], n(now + ttl), ARGV[9])
if redis.call('PTTL', KEYS[3]) < ttl then
  redis.call('PEXPIREAT', KEYS[3], n(now + ttl))
end
return {'OK', redis.call('HGETALL', KEYS[1])}
