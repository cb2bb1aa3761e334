-- case_assign.lua: hand an OPEN or ESCALATED case to another team (status unchanged); bump
-- stateVersion, record the transition on the hash and in the bounded history stream, refresh
-- the open-case TTL of both keys.
-- KEYS[1] case hash       <p>:v1:case:{c_<id>}
-- KEYS[2] history stream  <p>:v1:case:{c_<id>}:history
-- ARGV[1] tenantId  ARGV[2] expected stateVersion ('' = no If-Match)  ARGV[3] assignedTeam
-- ARGV[4] reason  ARGV[5] actor  ARGV[6] TTL ms (open)  ARGV[7] history max
-- Reply: {'OK', HGETALL case} | {'NOT_FOUND'} | {'STALE', current} | {'INVALID_STATUS', status}
--        | {'CORRUPT', field}
local s = redis.call('HMGET', KEYS[1], 'tenantId', 'stateVersion', 'status', 'escalationLevel')
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
local ttl = tonumber(ARGV[6])
local v = redis.call('HINCRBY', KEYS[1], 'stateVersion', 1)
redis.call('HSET', KEYS[1], 'assignedTeam', ARGV[3], 'updatedAtMs', now,
  'lastTransitionAtMs', now, 'lastTransitionReason', ARGV[4])
redis.call('XADD', KEYS[2], 'MAXLEN', ARGV[7], '*',
  'atMs', now, 'transition', 'assign', 'fromStatus', status, 'toStatus', status,
  'escalationLevel', s[4] or '0', 'assignedTeam', ARGV[3], 'reason', ARGV[4], 'actor', ARGV[5],
  'stateVersion', tostring(v))
redis.call('PEXPIRE', KEYS[1], ttl)
redis.call('PEXPIRE', KEYS[2], ttl)
return {'OK', redis.call('HGETALL', KEYS[1])}
