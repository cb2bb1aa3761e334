-- case_transition.lua: one manual case transition, checked against the table below; bump
-- stateVersion (compare-and-set when ARGV[3] is set), record the transition on the hash and in
-- the bounded history stream, move the case in its tenant's list indexes (case_index), and set
-- the TTL of both keys (Go passes the resolved-case TTL for resolve, the open-case TTL
-- otherwise) and the case's score in its tenant's quota set. The sweeper's transition is
-- case_auto_escalate.lua. The transition's event (case.escalated, case.assigned, case.resolved,
-- case.reopened) is appended to the tenant's event stream; a refusal appends none.
--   escalate  OPEN | ESCALATED → ESCALATED, escalationLevel + 1 up to ARGV[8]
--   assign    OPEN | ESCALATED → unchanged, assignedTeam = ARGV[9], assignee = ARGV[11] (the
--             assignment replaces the old one whole: '' leaves the case in the team's queue)
--   resolve   OPEN | ESCALATED → RESOLVED, resolvedAtMs = now
--   reopen    RESOLVED         → OPEN, resolvedAtMs cleared
-- KEYS[1] case hash       <p>:v1:case:{<tenantTag>}:<caseId>
-- KEYS[2] history stream  KEYS[1] .. ':history'
-- KEYS[3] quota set       <p>:v1:quota:{<tenantTag>}:cases  (member caseId, score the case's expiry)
-- KEYS[4] list coordinates <p>:v1:caseidx:{<tenantTag>}:where, KEYS[5..16] the list indexes
-- KEYS[17] the tenant's event stream <p>:v1:events:{<tenantTag>}
-- ARGV[1] transition  ARGV[2] tenantId  ARGV[3] expected stateVersion ('' = no If-Match)
-- ARGV[4] reason  ARGV[5] actor  ARGV[6] TTL ms  ARGV[7] history max
-- ARGV[8] max level (escalate)  ARGV[9] assignedTeam (assign)  ARGV[10] caseId (the member in KEYS[3])
-- ARGV[11] assignee (assign; '' = none)  ARGV[12] team tag (assign)  ARGV[13] assignee tag (assign)
-- ARGV[14] status tags 'OPEN ESCALATED RESOLVED'  ARGV[15] level tags 0..max (space-separated)
-- ARGV[16] the event envelope (events.Envelope)
-- Reply: {'OK', HGETALL case} | {'NOT_FOUND'} | {'STALE', current} | {'INVALID_STATUS', status}
--        | {'MAX_ESCALATION', level} | {'CORRUPT', field}
--#include object_keys
--#include case_history
--#include case_index
--#include case_event
local active = {OPEN = true, ESCALATED = true}
local rules = {
  escalate = {from = active, to = 'ESCALATED', event = 'case.escalated'},
  assign = {from = active, event = 'case.assigned'},
  resolve = {from = active, to = 'RESOLVED', event = 'case.resolved'},
  reopen = {from = {RESOLVED = true}, to = 'OPEN', event = 'case.reopened'},
}
local op = ARGV[1]
local rule = rules[op]
if not rule then return redis.error_reply('case_transition: unknown transition') end
local s, refused = object_load(ARGV[2], ARGV[3], 'status', 'escalationLevel', 'assignedTeam', 'team', 'assignee', 'dueAtMs')
if refused then return refused end
local status = s[3]
if not status or not rule.from[status] then return {'INVALID_STATUS', tostring(status)} end
local level, team, assignee = s[4] or '0', s[5] or s[6] or '', s[7] or ''
local tags = case_index_tags(4, ARGV[10])
if op == 'escalate' then
  local n = tonumber(s[4])
  if not n then return {'CORRUPT', 'escalationLevel'} end
  if n >= tonumber(ARGV[8]) then return {'MAX_ESCALATION', s[4]} end
  level = string.format('%.0f', n + 1)
elseif op == 'assign' then
  team, assignee = ARGV[9], ARGV[11]
  tags.team, tags.assignee = ARGV[12], ARGV[13] ~= '' and ARGV[13]
end
local to = rule.to or status
local t = redis.call('TIME')
local nowN = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local now = string.format('%.0f', nowN)
local v = redis.call('HINCRBY', KEYS[1], 'stateVersion', 1)
redis.call('HSET', KEYS[1], 'status', to, 'updatedAtMs', now,
  'lastTransitionAtMs', now, 'lastTransitionReason', ARGV[4])
if op == 'escalate' then redis.call('HSET', KEYS[1], 'escalationLevel', level) end
if op == 'assign' then
  -- an old-schema case names its team 'team': the new name replaces it, so the hash never holds both
  redis.call('HSET', KEYS[1], 'assignedTeam', team)
  redis.call('HDEL', KEYS[1], 'team')
  if assignee ~= '' then redis.call('HSET', KEYS[1], 'assignee', assignee) else redis.call('HDEL', KEYS[1], 'assignee') end
end
if op == 'resolve' then redis.call('HSET', KEYS[1], 'resolvedAtMs', now) end
if op == 'reopen' then redis.call('HDEL', KEYS[1], 'resolvedAtMs') end
case_history(ARGV[7], now, op, status, to, level, team, ARGV[4], ARGV[5], tostring(v), assignee)
local exp = string.format('%.0f', nowN + tonumber(ARGV[6]))
object_expire(exp, tonumber(ARGV[6]), ARGV[10])
tags.status, tags.level = case_index_lookup(ARGV[14], ARGV[15], to, level)
case_index_set(4, ARGV[10], tags, nowN, s[8] or '0', exp, tonumber(ARGV[6]))
local auto -- nil: the key is left out but for escalate
if op == 'escalate' then auto = false end
case_event(KEYS[17], event_env(ARGV[16]), nowN, rule.event, ARGV[10], status, to, level, team, assignee, v, auto)
return {'OK', redis.call('HGETALL', KEYS[1])}
