-- webhook_create.lua: register a webhook (hash, with its TTL), count it in its tenant's quota
-- set (which is also the tenant's list of webhooks), and give it a consumer group on the
-- tenant's event stream starting after the stream's last entry (when the stream does not
-- exist yet the deliverer creates the group at its first entry: webhook_group.lua).
-- KEYS[1] webhook hash   <p>:v1:webhook:{<tenantTag>}:<webhookId>
-- KEYS[2] quota set      <p>:v1:quota:{<tenantTag>}:webhooks  (member webhookId, score its expiry)
-- KEYS[3] event stream   <p>:v1:events:{<tenantTag>}
-- ARGV[1] webhookId  ARGV[2] tenantId  ARGV[3] url  ARGV[4] events (space-separated)
-- ARGV[5] TTL ms  ARGV[6] schemaVersion  ARGV[7] the tenant's quota
-- Reply: {'OK', HGETALL webhook} | {'EXISTS'} | {'QUOTA', ms until the earliest webhook expires}
--#include tenant_quota
--#include server_time
if redis.call('EXISTS', KEYS[1]) == 1 then return {'EXISTS'} end
local ttl = tonumber(ARGV[5])
local nowN, now, exp = server_window(ttl)
local wait = quota_full(KEYS[2], nowN, tonumber(ARGV[7]))
if wait then return {'QUOTA', wait} end
redis.call('HSET', KEYS[1], 'schemaVersion', ARGV[6], 'webhookId', ARGV[1], 'tenantId', ARGV[2],
  'url', ARGV[3], 'events', ARGV[4], 'createdAtMs', now, 'updatedAtMs', now, 'expiresAtMs', exp)
redis.call('PEXPIREAT', KEYS[1], exp)
quota_hold(KEYS[2], ARGV[1], exp, ttl)
if redis.call('EXISTS', KEYS[3]) == 1 then
  redis.pcall('XGROUP', 'CREATE', KEYS[3], ARGV[1], '$')
end
return {'OK', redis.call('HGETALL', KEYS[1])}
