-- case_auto_escalate.lua: the sweeper's transition. Escalates an overdue OPEN case once
-- (reason AUTO_ESCALATION), re-checking here, atomically, that the case still exists, is OPEN,
-- has never been auto-escalated and is due by the server's clock — so any number of sweepers
-- racing on the same case escalate it exactly once.
-- KEYS[1] case hash       <p>:v1:case:{c_<id>}
-- KEYS[2] history stream  <p>:v1:case:{c_<id>}:history
-- ARGV[1] max level  ARGV[2] TTL ms (open)  ARGV[3] history max  ARGV[4] actor
-- Reply: {'OK', HGETALL case} | {'GONE'} | {'NOT_OPEN', status} | {'ALREADY'}
--        | {'NOT_DUE', dueAtMs} | {'MAX_ESCALATION', level} | {'CORRUPT', field}
local s = redis.call('HMGET', KEYS[1], 'status', 'dueAtMs', 'escalationLevel', 'autoEscalatedAtMs', 'assignedTeam', 'team')
if not s[1] then
  return {'GONE'}
end
if s[1] ~= 'OPEN' then return {'NOT_OPEN', s[1]} end
if s[4] then return {'ALREADY'} end
local due = tonumber(s[2])
if not due then return {'CORRUPT', 'dueAtMs'} end
local level = tonumber(s[3])
if not level then return {'CORRUPT', 'escalationLevel'} end
local t = redis.call('TIME')
local nowN = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
if due > nowN then return {'NOT_DUE', s[2]} end
if level >= tonumber(ARGV[1]) then return {'MAX_ESCALATION', s[3]} end
local now = string.format('%.0f', nowN)
local ttl = tonumber(ARGV[2])
local v = redis.call('HINCRBY', KEYS[1], 'stateVersion', 1)
local newLevel = string.format('%.0f', level + 1)
redis.call('HSET', KEYS[1], 'status', 'ESCALATED', 'escalationLevel', newLevel, 'updatedAtMs', now,
  'lastTransitionAtMs', now, 'lastTransitionReason', 'AUTO_ESCALATION', 'autoEscalatedAtMs', now)
redis.call('XADD', KEYS[2], 'MAXLEN', ARGV[3], '*',
  'atMs', now, 'transition', 'auto_escalate', 'fromStatus', 'OPEN', 'toStatus', 'ESCALATED',
  'escalationLevel', newLevel, 'assignedTeam', s[5] or s[6] or '', 'reason', 'AUTO_ESCALATION',
  'actor', ARGV[4], 'stateVersion', tostring(v))
redis.call('PEXPIRE', KEYS[1], ttl)
redis.call('PEXPIRE', KEYS[2], ttl)
return {'OK', redis.call('HGETALL', KEYS[1])}
