-- webhook_tenant_add.lua: register a tenant's tag for the deliverers until its newest webhook
-- expires. The registry is one key (all tenants), bounded: expired members are pruned first.
-- KEYS[1] registry  <p>:v1:webhooktenants:{all}  (member tenantTag, score the expiry ms)
-- ARGV[1] tenantTag  ARGV[2] expiry ms (of the webhook being created)  ARGV[3] max members
-- Reply: {'OK'} | {'BOUND'} the registry is full
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', '(' .. string.format('%.0f', now))
if not redis.call('ZSCORE', KEYS[1], ARGV[1]) and redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[3]) then
  return {'BOUND'}
end
local exp = tonumber(ARGV[2])
local cur = tonumber(redis.call('ZSCORE', KEYS[1], ARGV[1]) or '0')
if exp > cur then
  redis.call('ZADD', KEYS[1], ARGV[2], ARGV[1])
end
local last = redis.call('ZRANGE', KEYS[1], -1, -1, 'WITHSCORES')
redis.call('PEXPIREAT', KEYS[1], last[2])
return {'OK'}
