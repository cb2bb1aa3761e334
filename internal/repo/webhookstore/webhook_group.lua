-- webhook_group.lua: give a live webhook its consumer group on the tenant's event stream, from
-- the stream's first entry, when the group is missing (the stream did not exist when the
-- webhook was created, or it expired since: every entry it holds now is newer than the webhook).
-- KEYS[1] webhook hash  <p>:v1:webhook:{<tenantTag>}:<webhookId>
-- KEYS[2] event stream  <p>:v1:events:{<tenantTag>}
-- ARGV[1] webhookId
-- Reply: {'OK'} the group exists now | {'NOT_FOUND'} no webhook, or no stream yet
if redis.call('EXISTS', KEYS[1]) == 0 or redis.call('EXISTS', KEYS[2]) == 0 then
  return {'NOT_FOUND'}
end
redis.pcall('XGROUP', 'CREATE', KEYS[2], ARGV[1], '0')
return {'OK'}
