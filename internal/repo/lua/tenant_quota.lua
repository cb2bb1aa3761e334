-- tenant_quota: a tenant's quota set of live objects (repo/quota.go): members are object ids
-- scored by their expiry (ms, server time). Put into the scripts that create, move or renew a
-- counted object (--#include tenant_quota).
-- quota_full(key, now, limit) prunes the members whose expiry is before now (a key lives while
-- now <= its expiry) and answers the ms until the earliest live member expires when the set
-- holds limit members (the create is refused: {'QUOTA', ms}), else nil.
local function quota_full(key, now, limit)
  redis.call('ZREMRANGEBYSCORE', key, '-inf', '(' .. string.format('%.0f', now))
  if redis.call('ZCARD', key) < limit then
    return nil
  end
  local first = redis.call('ZRANGE', key, 0, 0, 'WITHSCORES')
  return math.max(tonumber(first[2]) - now, 0)
end
-- quota_hold(key, member, exp, ttl) scores member with its object's expiry exp (ms, a string)
-- and keeps the set alive at least ttl ms, as long as that object.
local function quota_hold(key, member, exp, ttl)
  redis.call('ZADD', key, exp, member)
  if redis.call('PTTL', key) < ttl then
    redis.call('PEXPIREAT', key, exp)
  end
end
