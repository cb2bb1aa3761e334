-- tenant_quota: a tenant's quota set of live objects (repo/quota.go): members are object ids
-- scored by their expiry (ms, server time); a member is live while now <= its score. Put into
-- the scripts that create, move or renew a counted object (--#include tenant_quota).

-- quota_prune_max bounds the expired members one call prunes: the rest wait for the next call
-- (each create prunes more than it adds, so the set stays within the quota).
local quota_prune_max = 64

-- quota_prune(key, now, max, drop) removes at most max members whose expiry is before now,
-- after calling drop(ids) with them when drop is given (what else the objects leave: their
-- index entries, object_index), and answers how many.
local function quota_prune(key, now, max, drop)
  local old = redis.call('ZRANGEBYSCORE', key, '-inf', '(' .. string.format('%.0f', now), 'LIMIT', 0, max)
  if #old == 0 then return 0 end
  if drop then drop(old) end
  redis.call('ZREM', key, unpack(old))
  return #old
end

-- quota_full(key, now, limit, drop) prunes (quota_prune, bounded) and answers the ms until the
-- earliest live member expires when the set holds limit live members (the create is refused:
-- {'QUOTA', ms}), else nil. Only live members count: expired ones left for later are not.
local function quota_full(key, now, limit, drop)
  quota_prune(key, now, quota_prune_max, drop)
  local nowS = string.format('%.0f', now)
  if redis.call('ZCOUNT', key, nowS, '+inf') < limit then
    return nil
  end
  local first = redis.call('ZRANGEBYSCORE', key, nowS, '+inf', 'WITHSCORES', 'LIMIT', 0, 1)
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
