-- case_create.lua: open an escalation case (hash), start its bounded history stream and put it
-- in its tenant's due index, all with the open-case TTL, counted in the tenant's quota set in
-- the same step; or return the existing case when the id is already taken (an idempotent create
-- retried after a crash). The quota set's members are the tenant's cases scored by their expiry:
-- members whose expiry has passed (Redis TIME) are pruned first, and a full set (or a full due
-- index) refuses before anything is written.
-- KEYS[1] case hash       <p>:v1:case:{<tenantTag>}:<caseId>
-- KEYS[2] history stream  <p>:v1:case:{<tenantTag>}:<caseId>:history
-- KEYS[3] quota set       <p>:v1:quota:{<tenantTag>}:cases  (member caseId, score the case's expiry)
-- KEYS[4] due index       <p>:v1:casedue:{<tenantTag>}  (member caseId, score dueAtMs)
-- ARGV[1] caseId  ARGV[2] tenantId  ARGV[3] subjectRef  ARGV[4] assignedTeam  ARGV[5] dueAtMs
-- ARGV[6] reason  ARGV[7] actor  ARGV[8] TTL ms (open)  ARGV[9] history max  ARGV[10] schemaVersion
-- ARGV[11] the tenant's quota  ARGV[12] max due-index members
-- Reply: {'OK', HGETALL case} | {'EXISTS', HGETALL case}
--        | {'QUOTA', ms until the earliest live case expires} | {'BOUND'} the due index is full
if redis.call('EXISTS', KEYS[1]) == 1 then
  return {'EXISTS', redis.call('HGETALL', KEYS[1])}
end
local t = redis.call('TIME')
local nowN = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local now = string.format('%.0f', nowN)
local ttl = tonumber(ARGV[8])
local exp = string.format('%.0f', nowN + ttl)
-- A key lives while now <= its expiry: members scored before now are the expired cases.
redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', '(' .. now)
if redis.call('ZCARD', KEYS[3]) >= tonumber(ARGV[11]) then
  local first = redis.call('ZRANGE', KEYS[3], 0, 0, 'WITHSCORES')
  return {'QUOTA', math.max(tonumber(first[2]) - nowN, 0)}
end
if not redis.call('ZSCORE', KEYS[4], ARGV[1]) and redis.call('ZCARD', KEYS[4]) >= tonumber(ARGV[12]) then
  return {'BOUND'}
end
redis.call('DEL', KEYS[2])
redis.call('HSET', KEYS[1],
  'schemaVersion', ARGV[10], 'caseId', ARGV[1], 'tenantId', ARGV[2], 'subjectRef', ARGV[3],
  'status', 'OPEN', 'assignedTeam', ARGV[4], 'escalationLevel', '0', 'dueAtMs', ARGV[5],
  'stateVersion', '1', 'lastTransitionAtMs', now, 'lastTransitionReason', ARGV[6],
  'createdAtMs', now, 'updatedAtMs', now)
redis.call('XADD', KEYS[2], 'MAXLEN', ARGV[9], '*',
  'atMs', now, 'transition', 'create', 'fromStatus', '', 'toStatus', 'OPEN', 'escalationLevel', '0',
  'assignedTeam', ARGV[4], 'reason', ARGV[6], 'actor', ARGV[7], 'stateVersion', '1')
redis.call('PEXPIREAT', KEYS[1], exp)
redis.call('PEXPIREAT', KEYS[2], exp)
redis.call('ZADD', KEYS[3], exp, ARGV[1])
if redis.call('PTTL', KEYS[3]) < ttl then
  redis.call('PEXPIREAT', KEYS[3], exp)
end
redis.call('ZADD', KEYS[4], ARGV[5], ARGV[1])
redis.call('PEXPIRE', KEYS[4], ttl)
return {'OK', redis.call('HGETALL', KEYS[1])}
