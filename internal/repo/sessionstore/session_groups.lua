-- session_groups.lua: replace one session's groups (per-session layout). HSET and HDEL keep
-- the hash's TTL, so the session's idle and absolute deadlines are unchanged; the write makes
-- Redis push the invalidation of every gateway's kept copy.
-- KEYS[1]: session hash <prefix>:v1:sess:{<userTag>}:<idPart>
-- ARGV[1]: tenant of the caller; another tenant's session is left untouched
-- ARGV[2]: the groups joined by ',' ('' removes the field: no groups)
-- Reply: {'OK', nowMs} | {'NOT_FOUND'} (no such session, or another tenant's: untouched)

--#include session_clock

if redis.call('PTTL', KEYS[1]) < 0 then
  return {'NOT_FOUND'}
end
local tenant = redis.call('HGET', KEYS[1], 'tenantId')
if tenant ~= ARGV[1] then
  return {'NOT_FOUND'}
end
local now, nowS = session_now()
if ARGV[2] == '' then
  redis.call('HDEL', KEYS[1], 'groups')
  redis.call('HSET', KEYS[1], 'updatedAtMs', nowS)
else
  redis.call('HSET', KEYS[1], 'groups', ARGV[2], 'updatedAtMs', nowS)
end
return {'OK', now}
