-- quote_submit.lua: move a draft from DRAFT to SUBMITTED at an expected stateVersion, bump
-- stateVersion and refresh the TTL of both keys
-- and the draft's score in its tenant's quota set.
-- KEYS[1] summary hash  <p>:v1:quote:{<tenantTag>}:<quoteId>
-- KEYS[2] items hash    KEYS[1] .. ':items'
-- KEYS[3] quota set     <p>:v1:quota:{<tenantTag>}:quotes  (member quoteId, score expiresAtMs)
-- ARGV[1] tenantId  ARGV[2] expected stateVersion (If-Match; -1 matches any)  ARGV[3] TTL ms
-- ARGV[4] quoteId (the member in KEYS[3])
-- Reply: {'OK', HGETALL summary} | {'NOT_FOUND'} | {'STALE', current} | {'INVALID_STATUS', status}
--        | {'CORRUPT', field}
local s = redis.call('HMGET', KEYS[1], 'tenantId', 'stateVersion', 'status')
if not s[1] or s[1] ~= ARGV[1] then
  return {'NOT_FOUND'}
end
local version = tonumber(s[2])
if not version then return {'CORRUPT', 'stateVersion'} end
local want = tonumber(ARGV[2])
if want ~= -1 and version ~= want then return {'STALE', s[2]} end
if s[3] ~= 'DRAFT' then return {'INVALID_STATUS', tostring(s[3])} end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local ttl = tonumber(ARGV[3])
local function n(x) return string.format('%.0f', x) end
redis.call('HINCRBY', KEYS[1], 'stateVersion', 1)
redis.call('HSET', KEYS[1], 'status', 'SUBMITTED', 'submittedAtMs', n(now), 'updatedAtMs', n(now),
  'expiresAtMs', n(now + ttl))
redis.call('PEXPIREAT', KEYS[1], n(now + ttl))
redis.call('PEXPIREAT', KEYS[2], n(now + ttl))
-- the draft's place in the quota set follows its new expiry
redis.call('ZADD', KEYS[3], n(now + ttl), ARGV[4])
if redis.call('PTTL', KEYS[3]) < ttl then
  redis.call('PEXPIREAT', KEYS[3], n(now + ttl))
end
return {'OK', redis.call('HGETALL', KEYS[1])}
