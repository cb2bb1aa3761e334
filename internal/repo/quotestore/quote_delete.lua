-- quote_delete.lua: delete a quote draft and its items when it belongs to the caller's tenant,
-- and release its place in the tenant's quota set and its list indexes in the same step.
-- KEYS[1] summary hash  <p>:v1:quote:{<tenantTag>}:<quoteId>
-- KEYS[2] items hash    KEYS[1] .. ':items'
-- KEYS[3] quota set     <p>:v1:quota:{<tenantTag>}:quotes
-- KEYS[4..8] the list indexes (quote_index: where, all, customer, status, channel)
-- ARGV[1] tenantId of the caller  ARGV[2] quoteId (the member in KEYS[3])
-- Reply: {'OK'} deleted | {'NOT_FOUND'} absent, or another tenant's (left untouched)
--#include quote_index
local tenant = redis.call('HGET', KEYS[1], 'tenantId')
if not tenant or tenant ~= ARGV[1] then
  return {'NOT_FOUND'}
end
redis.call('DEL', KEYS[1], KEYS[2])
redis.call('ZREM', KEYS[3], ARGV[2])
quote_index_drop(ARGV[2])
return {'OK'}
