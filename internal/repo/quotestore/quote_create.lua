-- quote_create.lua: create a quote draft (summary hash) with zero totals and its TTL, counted in
-- its tenant's quota set in the same step; or return the existing draft when the id is already
-- taken (an idempotent create retried after a crash). The quota set's members are the tenant's
-- drafts scored by their expiry: members whose expiry has passed (Redis TIME) are pruned first
-- (a bounded number, with their index entries), and a full set refuses before anything is
-- written. The draft enters the list indexes at its createdAt, and quote.created is appended to
-- the tenant's event stream (a replay of an existing id appends none).
-- KEYS[1] summary hash  <p>:v1:quote:{<tenantTag>}:<quoteId>
-- KEYS[2] items hash    <p>:v1:quote:{<tenantTag>}:<quoteId>:items  (removed so a new draft starts empty)
-- KEYS[3] quota set     <p>:v1:quota:{<tenantTag>}:quotes  (member quoteId, score expiresAtMs)
-- KEYS[4..8] the list indexes (quote_index: where, all, customer, status, channel)
-- KEYS[9] the tenant's event stream <p>:v1:events:{<tenantTag>}
-- ARGV[1] quoteId  ARGV[2] tenantId  ARGV[3] customerId  ARGV[4] salesChannel  ARGV[5] currency
-- ARGV[6] TTL ms   ARGV[7] schemaVersion  ARGV[8] pricingVersion  ARGV[9] the tenant's quota
-- ARGV[10] the customer, status and channel tags (quote_index), space-separated
-- ARGV[11] the event envelope (events.Envelope)
-- Reply: {'OK', HGETALL summary} | {'EXISTS', HGETALL summary}
--        | {'QUOTA', ms until the earliest live draft expires}
--#include object_keys
--#include quote_index
--#include event_append
if redis.call('EXISTS', KEYS[1]) == 1 then
  return {'EXISTS', redis.call('HGETALL', KEYS[1])}
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local ttl = tonumber(ARGV[6])
local nowS, exp = string.format('%.0f', now), string.format('%.0f', now + ttl)
local wait = index_quota_full(KEYS[3], quote_index_first, quote_index_n, now, tonumber(ARGV[9]))
if wait then return {'QUOTA', wait} end
redis.call('DEL', KEYS[2])
redis.call('HSET', KEYS[1],
  'schemaVersion', ARGV[7], 'quoteId', ARGV[1], 'tenantId', ARGV[2], 'customerId', ARGV[3],
  'salesChannel', ARGV[4], 'currency', ARGV[5], 'status', 'DRAFT',
  'subtotalMinor', '0', 'discountMinor', '0', 'taxMinor', '0', 'totalMinor', '0', 'itemCount', '0',
  'pricingVersion', ARGV[8], 'stateVersion', '1',
  'createdAtMs', nowS, 'updatedAtMs', nowS, 'expiresAtMs', exp)
object_expire(exp, ttl, ARGV[1]) -- the items key is gone: its expiry is a no-op
quote_index(now, exp, ttl, ARGV[1], ARGV[10])
event_append(KEYS[9], event_env(ARGV[11]), now, 'quote.created', ARGV[1],
  {status = 'DRAFT', currency = ARGV[5], stateVersion = 1})
return {'OK', redis.call('HGETALL', KEYS[1])}
