-- quote_create.lua: create a quote draft (summary hash) with zero totals and its TTL, or return
-- the existing draft when the id is already taken (an idempotent create retried after a crash).
-- KEYS[1] summary hash  <p>:v1:quote:{q_<id>}
-- KEYS[2] items hash    <p>:v1:quote:{q_<id>}:items   (same tag; removed so a new draft starts empty)
-- ARGV[1] quoteId  ARGV[2] tenantId  ARGV[3] customerId  ARGV[4] salesChannel  ARGV[5] currency
-- ARGV[6] TTL ms   ARGV[7] schemaVersion  ARGV[8] pricingVersion
-- Reply: {'OK', HGETALL summary} | {'EXISTS', HGETALL summary}
if redis.call('EXISTS', KEYS[1]) == 1 then
  return {'EXISTS', redis.call('HGETALL', KEYS[1])}
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local ttl = tonumber(ARGV[6])
local function n(x) return string.format('%.0f', x) end
redis.call('DEL', KEYS[2])
redis.call('HSET', KEYS[1],
  'schemaVersion', ARGV[7], 'quoteId', ARGV[1], 'tenantId', ARGV[2], 'customerId', ARGV[3],
  'salesChannel', ARGV[4], 'currency', ARGV[5], 'status', 'DRAFT',
  'subtotalMinor', '0', 'discountMinor', '0', 'taxMinor', '0', 'totalMinor', '0', 'itemCount', '0',
  'pricingVersion', ARGV[8], 'stateVersion', '1',
  'createdAtMs', n(now), 'updatedAtMs', n(now), 'expiresAtMs', n(now + ttl))
redis.call('PEXPIRE', KEYS[1], ttl)
return {'OK', redis.call('HGETALL', KEYS[1])}
