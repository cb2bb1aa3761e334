-- object_index: a tenant's list indexes of one object type (quotes, cases), kept in the script
-- of every write (--#include object_index). Go side: repo.IndexMember, repo.EncodeCursor,
-- repo.DecodeCursor (internal/repo/index.go, cursor.go).
--
-- The keys, all under the tenant's tag (KEYS.md: "List indexes"), passed as KEYS[first..first+n]:
--   KEYS[first]        the coordinates hash `<p>:v1:<type>idx:{<tenantTag>}:where`: field = object
--                      id, value = its member in each index in KEYS order, space-separated, '-'
--                      where it is in none. It lets a write replace the old members exactly and a
--                      prune drop an expired object's entries although its hash is gone.
--   KEYS[first+1..+n]  the index sorted sets `<p>:v1:<type>idx:{<tenantTag>}:<name>`, score 0.
-- A member is `<valueTag>|<orderKey>|<id>` (index_member): valueTag a fixed-width keyed hash of
-- the filter value (repo.IndexTag; '' for the index of all objects), orderKey the 13-digit
-- zero-padded ms time the index orders by (updatedAt; dueAt for a queue). Members of one value
-- sort by time, then id: a cursor (the last member read) is an exact position, ties never skip
-- or repeat. Newest first is ZRANGE ... BYLEX REV, earliest first forward (index_range).
--
-- Use (every write script of the type, in the same script as the write):
--   create / change : index_set(first, n, id, {member or false, ...}, exp, ttl)
--   delete          : index_drop(first, n, id)
--   create's quota  : index_quota_full(quotaKey, first, n, now, limit)   (replaces quota_full)
--   list            : index_range / index_id to read; for a candidate whose hash reads as absent,
--                     index_live(quotaKey, id, now): live means its slot is moving (the hash is
--                     on the other node): answer redis.error_reply('TRYAGAIN ...') at once
--                     (nothing written; the gateway answers 503); not live: gone, drop it.
--                     Write only AFTER every read: index_drop for the gone ones, then
--                     index_prune(quotaKey, first, n, now, max). Without the check, a list run
--                     on a slot's new master before the hashes arrive drops every live object
--                     (TestQuoteListDuringSlotMigration).
-- Every key's TTL grows to the object's expiry exp (ms string), ttl ms from now, as quota_hold
-- does for the quota set: an index outlives every object it lists, and no key is left without a
-- TTL. An expired object leaves the indexes with its quota member, in the same call (the
-- prune is driven by the quota set's expired ids), so nothing is orphaned.
--#include tenant_quota

-- index_member(tag, orderMs, id) is the member of id in an index: tag ('' for all objects),
-- orderMs (a number or numeric string) zero-padded to 13 digits, id.
local function index_member(tag, orderMs, id)
  return tag .. '|' .. string.format('%013.0f', tonumber(orderMs)) .. '|' .. id
end

-- index_id(member) is the object id a member names (after its last '|').
local function index_id(member)
  return string.match(member, '|([^|]*)$')
end

-- index_hold(key, exp, ttl) keeps key alive until at least exp (ms string), ttl ms from now.
local function index_hold(key, exp, ttl)
  if redis.call('PTTL', key) < ttl then
    redis.call('PEXPIREAT', key, exp)
  end
end

-- index_where(first, id) is id's current members (a table, '-' for none), or nil when the
-- coordinates hash does not list id.
local function index_where(first, id)
  local v = redis.call('HGET', KEYS[first], id)
  if not v then return nil end
  local out = {}
  for m in string.gmatch(v, '%S+') do out[#out + 1] = m end
  return out
end

-- index_set(first, n, id, members, exp, ttl) puts id in the n indexes: members[i] is its member
-- in KEYS[first+i] (false/nil: in none). Old members that differ are removed, the new added,
-- the coordinates hash rewritten; every key then lives until at least exp.
local function index_set(first, n, id, members, exp, ttl)
  local old = index_where(first, id) or {}
  local enc = {}
  for i = 1, n do
    local key, o, m = KEYS[first + i], old[i], members[i]
    if o and o ~= '-' and o ~= m then redis.call('ZREM', key, o) end
    if m then
      redis.call('ZADD', key, 0, m)
      index_hold(key, exp, ttl)
      enc[i] = m
    else
      enc[i] = '-'
    end
  end
  redis.call('HSET', KEYS[first], id, table.concat(enc, ' '))
  index_hold(KEYS[first], exp, ttl)
end

-- index_drop(first, n, id) removes id from the n indexes and the coordinates hash (nothing
-- when it is in none).
local function index_drop(first, n, id)
  local old = index_where(first, id)
  if not old then return end
  for i = 1, n do
    if old[i] and old[i] ~= '-' then redis.call('ZREM', KEYS[first + i], old[i]) end
  end
  redis.call('HDEL', KEYS[first], id)
end

-- index_dropper(first, n) is quota_full's drop: every id given leaves the indexes.
local function index_dropper(first, n)
  return function(ids)
    for _, id in ipairs(ids) do index_drop(first, n, id) end
  end
end

-- index_quota_full(quotaKey, first, n, now, limit) is quota_full for an indexed type: the
-- expired ids it prunes from the quota set leave the indexes in the same call.
local function index_quota_full(quotaKey, first, n, now, limit)
  return quota_full(quotaKey, now, limit, index_dropper(first, n))
end

-- index_prune(quotaKey, first, n, now, max) drops at most max expired objects (quota score
-- before now) from the indexes and the quota set; answers how many.
local function index_prune(quotaKey, first, n, now, max)
  return quota_prune(quotaKey, now, max, index_dropper(first, n))
end

-- index_live(quotaKey, id, now) reports whether id's quota score says it is alive (an
-- absent hash is then elsewhere: the slot is moving), rather than expired or deleted.
local function index_live(quotaKey, id, now)
  local exp = tonumber(redis.call('ZSCORE', quotaKey, id))
  return exp ~= nil and exp >= now
end

-- index_range(key, tag, cursor, since, count, rev) reads at most count members of tag's value
-- after cursor (a member, '' = from the start) and, when since ~= '', whose order key is at
-- or after since (ms): newest first when rev, earliest first otherwise.
local function index_range(key, tag, cursor, since, count, rev)
  local low, high = '(' .. tag .. '|', '(' .. tag .. '}' -- '}' sorts right after '|'
  if since ~= '' then low = '[' .. tag .. '|' .. string.format('%013.0f', tonumber(since)) end
  if rev then
    if cursor ~= '' then high = '(' .. cursor end
    return redis.call('ZRANGE', key, high, low, 'BYLEX', 'REV', 'LIMIT', 0, count)
  end
  if cursor ~= '' then low = '(' .. cursor end
  return redis.call('ZRANGE', key, low, high, 'BYLEX', 'LIMIT', 0, count)
end
