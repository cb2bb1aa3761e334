-- case_create.lua: open an escalation case (hash) and start its bounded history stream, both
-- with the open-case TTL; or return the existing case when the id is already taken (an
-- idempotent create retried after a crash).
-- KEYS[1] case hash       <p>:v1:case:{c_<id>}
-- KEYS[2] history stream  <p>:v1:case:{c_<id>}:history  (same tag)
-- ARGV[1] caseId  ARGV[2] tenantId  ARGV[3] subjectRef  ARGV[4] assignedTeam  ARGV[5] dueAtMs
-- ARGV[6] reason  ARGV[7] actor  ARGV[8] TTL ms (open)  ARGV[9] history max  ARGV[10] schemaVersion
-- Reply: {'OK', HGETALL case} | {'EXISTS', HGETALL case}
if redis.call('EXISTS', KEYS[1]) == 1 then
  return {'EXISTS', redis.call('HGETALL', KEYS[1])}
end
local t = redis.call('TIME')
local now = string.format('%.0f', tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000))
local ttl = tonumber(ARGV[8])
redis.call('DEL', KEYS[2])
redis.call('HSET', KEYS[1],
  'schemaVersion', ARGV[10], 'caseId', ARGV[1], 'tenantId', ARGV[2], 'subjectRef', ARGV[3],
  'status', 'OPEN', 'assignedTeam', ARGV[4], 'escalationLevel', '0', 'dueAtMs', ARGV[5],
  'stateVersion', '1', 'lastTransitionAtMs', now, 'lastTransitionReason', ARGV[6],
  'createdAtMs', now, 'updatedAtMs', now)
redis.call('XADD', KEYS[2], 'MAXLEN', ARGV[9], '*',
  'atMs', now, 'transition', 'create', 'fromStatus', '', 'toStatus', 'OPEN', 'escalationLevel', '0',
  'assignedTeam', ARGV[4], 'reason', ARGV[6], 'actor', ARGV[7], 'stateVersion', '1')
redis.call('PEXPIRE', KEYS[1], ttl)
redis.call('PEXPIRE', KEYS[2], ttl)
return {'OK', redis.call('HGETALL', KEYS[1])}
