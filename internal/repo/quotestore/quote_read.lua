-- quote_read.lua: read a quote's summary and line items in one consistent snapshot.
-- KEYS[1] summary hash  <p>:v1:quote:{<tenantTag>}:<quoteId>
-- KEYS[2] items hash    KEYS[1] .. ':items'
-- ARGV[1] tenantId of the caller
-- Reply: {'OK', HGETALL summary, HGETALL items} | {'NOT_FOUND'} (missing, or another tenant's)
local tenant = redis.call('HGET', KEYS[1], 'tenantId')
if not tenant or tenant ~= ARGV[1] then
  return {'NOT_FOUND'}
end
return {'OK', redis.call('HGETALL', KEYS[1]), redis.call('HGETALL', KEYS[2])}
