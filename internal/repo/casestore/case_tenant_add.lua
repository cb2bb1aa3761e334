-- case_tenant_add.lua: register a tenant tag in the global set the sweepers read to find the
-- tenants' due indexes (score = last registration, server time), bounded, with a TTL.
-- KEYS[1] registry ZSET  <p>:v1:casetenants:{all}
-- ARGV[1] tenantTag  ARGV[2] TTL ms  ARGV[3] max members
-- Reply: {'OK'} | {'BOUND'}
if not redis.call('ZSCORE', KEYS[1], ARGV[1]) and redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[3]) then
  return {'BOUND'}
end
local t = redis.call('TIME')
local now = string.format('%.0f', tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000))
redis.call('ZADD', KEYS[1], now, ARGV[1])
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return {'OK'}
