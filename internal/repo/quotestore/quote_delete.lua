-- quote_delete.lua: delete a quote draft and its items when it belongs to the caller's tenant,
-- and release its place in the tenant's quota set and its list indexes in the same step, with
-- quote.deleted in the tenant's event stream (an absent draft: nothing, no event).
-- KEYS[1] summary hash  <p>:v1:quote:{<tenantTag>}:<quoteId>
-- KEYS[2] items hash    KEYS[1] .. ':items'
-- KEYS[3] quota set     <p>:v1:quota:{<tenantTag>}:quotes
-- KEYS[4..8] the list indexes (quote_index: where, all, customer, status, channel)
-- KEYS[9] the tenant's event stream <p>:v1:events:{<tenantTag>}
-- ARGV[1] tenantId of the caller  ARGV[2] quoteId (the member in KEYS[3])
-- ARGV[3] the event envelope (events.Envelope)
-- Reply: {'OK'} deleted | {'NOT_FOUND'} absent, or another tenant's (left untouched)
--#include quote_index
--#include event_append
local s = redis.call('HMGET', KEYS[1], 'tenantId', 'status')
if not s[1] or s[1] ~= ARGV[1] then
  return {'NOT_FOUND'}
end
redis.call('DEL', KEYS[1], KEYS[2])
redis.call('ZREM', KEYS[3], ARGV[2])
quote_index_drop(ARGV[2])
local t = redis.call('TIME')
event_append(KEYS[9], event_env(ARGV[3]), tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000),
  'quote.deleted', ARGV[2], {status = s[2] or ''})
return {'OK'}
