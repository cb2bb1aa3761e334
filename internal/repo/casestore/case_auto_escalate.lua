-- case_auto_escalate.lua: the sweeper's transition. Escalates an overdue OPEN case once
-- (reason auto_escalate, the transition's name), re-checking here, atomically, that the case
-- still exists, is OPEN, has never been auto-escalated and is due by the server's clock — so
-- any number of sweepers racing on the same case escalate it exactly once. The open TTL is renewed on both keys and on
-- the case's score in its tenant's quota set; the case moves in its tenant's list indexes;
-- case.escalated (auto) is appended to the tenant's event stream, so exactly once too (the
-- event's tenant is the case's, read here: the sweeper knows only the tag).
-- KEYS[1] case hash       <p>:v1:case:{<tenantTag>}:<caseId>
-- KEYS[2] history stream  KEYS[1] .. ':history'
-- KEYS[3] quota set       <p>:v1:quota:{<tenantTag>}:cases  (member caseId, score the case's expiry)
-- KEYS[4] list coordinates <p>:v1:caseidx:{<tenantTag>}:where, KEYS[5..16] the list indexes
-- KEYS[17] the tenant's event stream <p>:v1:events:{<tenantTag>}
-- ARGV[1] max level  ARGV[2] TTL ms (open)  ARGV[3] history max  ARGV[4] actor
-- ARGV[5] caseId (the member in KEYS[3])
-- ARGV[6] status tags 'OPEN ESCALATED RESOLVED'  ARGV[7] level tags 0..max (space-separated)
-- ARGV[8] the event envelope (events.Envelope; its tenant is ignored)
-- Reply: {'OK', HGETALL case} | {'GONE'} | {'NOT_OPEN', status} | {'ALREADY'}
--        | {'NOT_DUE', dueAtMs} | {'MAX_ESCALATION', level} | {'CORRUPT', field}
--#include object_keys
--#include case_history
--#include case_index
--#include case_event
local s = redis.call('HMGET', KEYS[1], 'status', 'dueAtMs', 'escalationLevel', 'autoEscalatedAtMs', 'assignedTeam', 'team', 'assignee', 'tenantId')
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
local v = redis.call('HINCRBY', KEYS[1], 'stateVersion', 1)
local newLevel = string.format('%.0f', level + 1)
redis.call('HSET', KEYS[1], 'status', 'ESCALATED', 'escalationLevel', newLevel, 'updatedAtMs', now,
  'lastTransitionAtMs', now, 'lastTransitionReason', 'auto_escalate', 'autoEscalatedAtMs', now)
case_history(ARGV[3], now, 'auto_escalate', 'OPEN', 'ESCALATED', newLevel, s[5] or s[6] or '', 'auto_escalate',
  ARGV[4], tostring(v), s[7])
local exp = string.format('%.0f', nowN + tonumber(ARGV[2]))
object_expire(exp, tonumber(ARGV[2]), ARGV[5])
local tags = case_index_tags(4, ARGV[5])
tags.status, tags.level = case_index_lookup(ARGV[6], ARGV[7], 'ESCALATED', newLevel)
case_index_set(4, ARGV[5], tags, nowN, s[2], exp, tonumber(ARGV[2]))
local env = event_env(ARGV[8])
env.tenant = s[8] or ''
case_event(KEYS[17], env, nowN, 'case.escalated', ARGV[5], 'OPEN', 'ESCALATED', newLevel, s[5] or s[6] or '', s[7] or '', v, true)
return {'OK', redis.call('HGETALL', KEYS[1])}
