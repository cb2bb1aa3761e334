-- case_create.lua: open an escalation case (hash), start its bounded history stream and put it
-- in its tenant's due index and list indexes (case_index), all with the open-case TTL, counted in
-- the tenant's quota set in the same step; or return the existing case when the id is already
-- taken (an idempotent create retried after a crash). The quota set's members are the tenant's
-- cases scored by their expiry: members whose expiry has passed (Redis TIME) are pruned first
-- (bounded), leaving the list indexes with them, and a full set (or a full due index) refuses
-- before anything is written. case.created is appended to the tenant's event stream (a replay
-- of an existing id appends none).
-- KEYS[1] case hash       <p>:v1:case:{<tenantTag>}:<caseId>
-- KEYS[2] history stream  <p>:v1:case:{<tenantTag>}:<caseId>:history
-- KEYS[3] quota set       <p>:v1:quota:{<tenantTag>}:cases  (member caseId, score the case's expiry)
-- KEYS[4] due index       <p>:v1:casedue:{<tenantTag>}  (member caseId, score dueAtMs)
-- KEYS[5] list coordinates <p>:v1:caseidx:{<tenantTag>}:where, KEYS[6..17] the list indexes
--         <p>:v1:caseidx:{<tenantTag>}:<name> (case_index)
-- KEYS[18] the tenant's event stream <p>:v1:events:{<tenantTag>}
-- ARGV[1] caseId  ARGV[2] tenantId  ARGV[3] subjectRef  ARGV[4] assignedTeam  ARGV[5] dueAtMs
-- ARGV[6] reason  ARGV[7] actor  ARGV[8] TTL ms (open)  ARGV[9] history max  ARGV[10] schemaVersion
-- ARGV[11] the tenant's quota  ARGV[12] max due-index members  ARGV[13] assignee ('' = none)
-- ARGV[14..18] value tags: status OPEN, level 0, team, assignee ('' = none), subject
-- ARGV[19] the event envelope (events.Envelope)
-- Reply: {'OK', HGETALL case} | {'EXISTS', HGETALL case}
--        | {'QUOTA', ms until the earliest live case expires} | {'BOUND'} the due index is full
--#include object_keys
--#include case_history
--#include case_index
--#include event_append
--#include server_time
if redis.call('EXISTS', KEYS[1]) == 1 then
  return {'EXISTS', redis.call('HGETALL', KEYS[1])}
end
local ttl = tonumber(ARGV[8])
local nowN, now, exp = server_window(ttl)
local wait = index_quota_full(KEYS[3], 5, case_index_n, nowN, tonumber(ARGV[11]))
if wait then return {'QUOTA', wait} end
if not redis.call('ZSCORE', KEYS[4], ARGV[1]) and redis.call('ZCARD', KEYS[4]) >= tonumber(ARGV[12]) then
  return {'BOUND'}
end
redis.call('DEL', KEYS[2])
redis.call('HSET', KEYS[1],
  'schemaVersion', ARGV[10], 'caseId', ARGV[1], 'tenantId', ARGV[2], 'subjectRef', ARGV[3],
  'status', 'OPEN', 'assignedTeam', ARGV[4], 'escalationLevel', '0', 'dueAtMs', ARGV[5],
  'stateVersion', '1', 'lastTransitionAtMs', now, 'lastTransitionReason', ARGV[6],
  'createdAtMs', now, 'updatedAtMs', now)
if ARGV[13] ~= '' then redis.call('HSET', KEYS[1], 'assignee', ARGV[13]) end
case_history(ARGV[9], now, 'create', '', 'OPEN', '0', ARGV[4], ARGV[6], ARGV[7], '1', ARGV[13])
object_expire(exp, ttl, ARGV[1])
case_index_set(5, ARGV[1], {status = ARGV[14], level = ARGV[15], team = ARGV[16],
  assignee = ARGV[17] ~= '' and ARGV[17], subject = ARGV[18]}, nowN, ARGV[5], exp, ttl)
redis.call('ZADD', KEYS[4], ARGV[5], ARGV[1])
redis.call('PEXPIRE', KEYS[4], ttl)
event_append(KEYS[18], event_env(ARGV[19]), nowN, 'case.created', ARGV[1],
  {status = 'OPEN', level = 0, team = ARGV[4], assigned = ARGV[13] ~= '', dueAtMs = tonumber(ARGV[5])})
return {'OK', redis.call('HGETALL', KEYS[1])}
