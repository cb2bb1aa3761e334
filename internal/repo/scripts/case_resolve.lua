-- case_resolve.lua: OPEN | ESCALATED → RESOLVED; bump stateVersion, record resolvedAtMs and the
-- transition on the hash and in the bounded history stream, and switch both keys to the
-- resolved-case TTL (the case expires that long after resolution).
-- KEYS[1] case hash       <p>:v1:case:{c_<id>}
-- KEYS[2] history stream  <p>:v1:case:{c_<id>}:history
-- ARGV[1] tenantId  ARGV[2] expected stateVersion ('' = no If-Match)  ARGV[3] reason  ARGV[4] actor
-- ARGV[5] TTL ms (resolved)  ARGV[6] history max
-- Reply: {'OK', HGETALL case} | {'NOT_FOUND'} | {'STALE', current} | {'INVALID_STATUS', status}
--        | {'CORRUPT', field}
local s = redis.call('HMGET', KEYS[1], 'tenantId', 'stateVersion', 'status', 'escalationLevel', 'assignedTeam', 'team')
if not s[1] or s[1] ~= ARGV[1] then
  return {'NOT_FOUND'}
end
local version = tonumber(s[2])
if not version then return {'CORRUPT', 'stateVersion'} end
if ARGV[2] ~= '' and version ~= tonumber(ARGV[2]) then return {'STALE', s[2]} end
local status = s[3]
if status ~= 'OPEN' and status ~= 'ESCALATED' then return {'INVALID_STATUS', tostring(status)} end
local t = redis.call('TIME')
local now = string.format('%.0f', tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000))
local ttl = tonumber(ARGV[5])
local v = redis.call('HINCRBY', KEYS[1], 'stateVersion', 1)
redis.call('HSET', KEYS[1], 'status', 'RESOLVED', 'resolvedAtMs', now, 'updatedAtMs', now,
  'lastTransitionAtMs', now, 'lastTransitionReason', ARGV[3])
redis.call('XADD', KEYS[2], 'MAXLEN', ARGV[6], '*',
  'atMs', now, 'transition', 'resolve', 'fromStatus', status, 'toStatus', 'RESOLVED',
  'escalationLevel', s[4] or '0', 'assignedTeam', s[5] or s[6] or '', 'reason', ARGV[3], 'actor', ARGV[4],
  'stateVersion', tostring(v))
redis.call('PEXPIRE', KEYS[1], ttl)
redis.call('PEXPIRE', KEYS[2], ttl)
return {'OK', redis.call('HGETALL', KEYS[1])}
