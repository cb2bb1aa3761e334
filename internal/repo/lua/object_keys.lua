-- object_keys: the keys of a counted object with a version (a quote draft, a case): KEYS[1] its
-- hash (tenantId, stateVersion, ...), KEYS[2] its second key (items, history), KEYS[3] its
-- tenant's quota set (--#include object_keys).
--#include tenant_quota
-- object_load(tenant, expected, ...) reads tenantId, stateVersion and the fields named from
-- KEYS[1] for tenant at version expected ('' = any): the values (tenantId first), or nil and
-- the refusal: {'NOT_FOUND'} absent or another tenant's | {'CORRUPT', 'stateVersion'} |
-- {'STALE', current}.
local function object_load(tenant, expected, ...)
  local s = redis.call('HMGET', KEYS[1], 'tenantId', 'stateVersion', ...)
  if not s[1] or s[1] ~= tenant then
    return nil, {'NOT_FOUND'}
  end
  local version = tonumber(s[2])
  if not version then return nil, {'CORRUPT', 'stateVersion'} end
  if expected ~= '' and version ~= tonumber(expected) then return nil, {'STALE', s[2]} end
  return s
end
-- object_expire(exp, ttl, id) moves both keys and the object's place in the quota set to
-- expiry exp (ms, a string), ttl ms from now.
local function object_expire(exp, ttl, id)
  redis.call('PEXPIREAT', KEYS[1], exp)
  redis.call('PEXPIREAT', KEYS[2], exp)
  quota_hold(KEYS[3], id, exp, ttl)
end
