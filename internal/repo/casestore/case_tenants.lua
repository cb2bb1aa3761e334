-- case_tenants.lua: the sweepers' view of the tenant registry: drop tenants not registered for
-- longer than the horizon (their due indexes have expired), then list the rest.
-- KEYS[1] registry ZSET  <p>:v1:casetenants:{all}
-- ARGV[1] horizon ms (a tenant registered before now - horizon is dropped)  ARGV[2] max listed
-- Reply: {'OK', nowMs, tenantTag...}  (nowMs an integer, the server's clock)
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', '(' .. string.format('%.0f', now - tonumber(ARGV[1])))
local out = {'OK', now}
for _, tag in ipairs(redis.call('ZRANGE', KEYS[1], 0, tonumber(ARGV[2]) - 1)) do
  out[#out + 1] = tag
end
return out
