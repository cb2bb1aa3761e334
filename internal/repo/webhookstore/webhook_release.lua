-- webhook_release.lua: give a webhook's delivery lease up, if the caller holds it.
-- KEYS[1] lease  <p>:v1:webhooklease:{<tenantTag>}:<webhookId>
-- ARGV[1] holder
-- Reply: {'OK'}
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('DEL', KEYS[1])
end
return {'OK'}
