-- session_part: one session's fields in the per-user layout's hash KEYS[1], "<idPart>:<name>"
-- (--#include session_part). p is the session's field-name prefix, "<idPart>:" (field names, not
-- keys: every key is in KEYS).
--#include session_fields
--#include session_live
-- part_load(tenant, p, ...) reads tenantId, the session's live marker and the fields named (full
-- names): the values, then the session's absolute deadline and createdAtMs (ms), or nil when
-- the session is missing, another tenant's, or its marker does not parse.
local function part_load(tenant, p, ...)
  local v = redis.call('HMGET', KEYS[1], 'tenantId', p .. LIVE, ...)
  local abs, _, created = live_split(v[2])
  if not abs or not v[1] or v[1] ~= tenant then
    return nil
  end
  return v, abs, created
end
-- part_idle(p) is the session's field TTL in ms: what is left of its idle window (-1: none,
-- corrupt but bounded by the key's TTL).
local function part_idle(p)
  return redis.call('HPTTL', KEYS[1], 'FIELDS', 1, p .. LIVE)[1]
end
-- part_expire(ttl, p, ...) gives the session's fields named (unprefixed) the field TTL ttl ms,
-- when ttl > 0.
local function part_expire(ttl, p, ...)
  if ttl <= 0 then
    return
  end
  local names = {...}
  for i = 1, #names do
    names[i] = p .. names[i]
  end
  redis.call('HPEXPIRE', KEYS[1], string.format('%d', ttl), 'FIELDS', #names, unpack(names))
end
-- part_write(ttl, p, nowS, name, value, ...) writes the session's fields named (unprefixed) and
-- the hash's updatedAtMs (nowS), and gives those fields the field TTL ttl ms (part_expire).
local function part_write(ttl, p, nowS, ...)
  local kv = {...}
  local set, names = {}, {}
  for i = 1, #kv, 2 do
    set[#set + 1] = p .. kv[i]
    set[#set + 1] = kv[i + 1]
    names[#names + 1] = kv[i]
  end
  redis.call('HSET', KEYS[1], 'updatedAtMs', nowS, unpack(set))
  part_expire(ttl, p, unpack(names))
end
