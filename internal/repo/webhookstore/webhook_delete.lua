-- webhook_delete.lua: remove a webhook with its consumer group, its lease and its delivery
-- records; idempotent.
-- KEYS[1] webhook hash      <p>:v1:webhook:{<tenantTag>}:<webhookId>
-- KEYS[2] quota set         <p>:v1:quota:{<tenantTag>}:webhooks
-- KEYS[3] event stream      <p>:v1:events:{<tenantTag>}
-- KEYS[4] lease             <p>:v1:webhooklease:{<tenantTag>}:<webhookId>
-- KEYS[5] delivery records  <p>:v1:webhookdeliveries:{<tenantTag>}:<webhookId>
-- KEYS[6] their order       <p>:v1:webhookdeliveries:{<tenantTag>}:<webhookId>:recent
-- ARGV[1] webhookId
-- Reply: {'OK'}
redis.call('DEL', KEYS[1], KEYS[4], KEYS[5], KEYS[6])
redis.call('ZREM', KEYS[2], ARGV[1])
if redis.call('EXISTS', KEYS[3]) == 1 then
  redis.pcall('XGROUP', 'DESTROY', KEYS[3], ARGV[1])
end
return {'OK'}
