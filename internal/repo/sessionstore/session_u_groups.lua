-- session_u_groups.lua: replace one session's groups in the per-user layout (docs/KEYS.md,
-- "Sessions"). <idPart>:groups gets the session's idle deadline as its field TTL (the
-- marker's expiry: HSET clears a field's TTL, so it is set again in this same step), and
-- <idPart>:updatedAtMs, which shares it, keeps it too; the write makes Redis push the
-- invalidation of every gateway's kept copy.
-- KEYS[1]: the user's hash <prefix>:v1:sess:{<userTag>}
--          (the only key: a single-key script is served while the user's slot migrates)
-- ARGV[1]: tenant of the caller; another tenant's session is left untouched
-- ARGV[2]: idPart
-- ARGV[3]: the groups joined by ',' ('' removes the field: no groups)
-- Reply: {'OK', nowMs} | {'NOT_FOUND'} (no live session, or another tenant's: untouched)

--#include session_clock
--#include session_fields

local p = ARGV[2] .. ':' -- field name prefix (not a key: every key is in KEYS)
local exp = redis.call('HPEXPIRETIME', KEYS[1], 'FIELDS', 1, p .. LIVE)
if type(exp) ~= 'table' or not exp[1] or tonumber(exp[1]) <= 0 then
  return {'NOT_FOUND'}
end
if redis.call('HGET', KEYS[1], 'tenantId') ~= ARGV[1] then
  return {'NOT_FOUND'}
end
local at = string.format('%d', exp[1])
local now, nowS = session_now()
redis.call('HSET', KEYS[1], 'updatedAtMs', nowS, p .. 'updatedAtMs', nowS)
if ARGV[3] == '' then
  redis.call('HDEL', KEYS[1], p .. 'groups')
  redis.call('HPEXPIREAT', KEYS[1], at, 'FIELDS', 1, p .. 'updatedAtMs')
else
  redis.call('HSET', KEYS[1], p .. 'groups', ARGV[3])
  redis.call('HPEXPIREAT', KEYS[1], at, 'FIELDS', 2, p .. 'groups', p .. 'updatedAtMs')
end
return {'OK', now}
