-- webhook_lease.lua: take a webhook's delivery lease when it is free, or renew it for its holder.
-- KEYS[1] lease  <p>:v1:webhooklease:{<tenantTag>}:<webhookId>
-- ARGV[1] holder (a deliverer's consumer name)  ARGV[2] TTL ms
-- Reply: {'CLAIMED'} the caller holds it | {'STALE'} another holder has it
local cur = redis.call('GET', KEYS[1])
if cur and cur ~= ARGV[1] then
  return {'STALE'}
end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
return {'CLAIMED'}
