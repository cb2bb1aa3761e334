-- quote_delete.lua: delete a quote draft and its items when it belongs to the caller's tenant.
-- KEYS[1] summary hash  <p>:v1:quote:{q_<id>}
-- KEYS[2] items hash    <p>:v1:quote:{q_<id>}:items
-- ARGV[1] tenantId of the caller
-- Reply: {'OK'} deleted | {'NOT_FOUND'} absent, or another tenant's (left untouched)
local tenant = redis.call('HGET', KEYS[1], 'tenantId')
if not tenant or tenant ~= ARGV[1] then
  return {'NOT_FOUND'}
end
redis.call('DEL', KEYS[1], KEYS[2])
return {'OK'}
