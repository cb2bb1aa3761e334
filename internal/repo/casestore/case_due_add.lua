-- case_due_add.lua: put a case in its tenant's due index (score = dueAtMs), bounded, and
-- refresh the index's TTL (at least as long as any indexed case can stay open).
-- KEYS[1] due index ZSET  <p>:v1:casedue:{<tenantTag>}
-- ARGV[1] caseId  ARGV[2] dueAtMs  ARGV[3] TTL ms  ARGV[4] max members
-- Reply: {'OK'} | {'BOUND'}
if not redis.call('ZSCORE', KEYS[1], ARGV[1]) and redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[4]) then
  return {'BOUND'}
end
redis.call('ZADD', KEYS[1], ARGV[2], ARGV[1])
redis.call('PEXPIRE', KEYS[1], ARGV[3])
return {'OK'}
