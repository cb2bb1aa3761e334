-- session_u_rotate.lua: the per-user layout's rotation (docs/KEYS.md, "Sessions"): give a
-- session a new token. Every field "<oldIdPart>:<name>" moves to "<newIdPart>:<name>" with its
-- own remaining field TTL (the live challenge's shorter one included), lastRotatedAtMs and
-- updatedAtMs are written (with the session's field TTL), and nothing is left under the old id
-- part, all in one atomic step: the old token stops working at once, the idle window and the
-- absolute deadline are kept. The hash's updatedAtMs is set; the key's TTL is raised (never
-- shortened) to the absolute deadline.
-- KEYS[1]: the user's hash <prefix>:v1:sess:{<userTag>}
--          (the only key: a single-key script is served while the user's slot migrates)
-- ARGV[1]: tenant of the caller (another tenant's session answers 'NOT_FOUND')
-- ARGV[2]: old idPart, ARGV[3]: new idPart
-- Reply: {'NOT_FOUND'} | {'EXISTS'} |
--        {'OK', nowMs, pttlMs, status, authLevel, createdAtMs, absoluteExpiresAtMs, groups}
--        (status and authLevel nil when the session does not hold them: ACTIVE and BASIC, the
--        defaults, are not written; rotation keeps both as they are; createdAtMs is the hash's
--        when the session holds none; groups nil when the session has none)

--#include session_fields

-- Field names, not keys: every key touched is in KEYS.
local oldPart, newPart = ARGV[2], ARGV[3]
local old, new = oldPart .. ':', newPart .. ':'
local v = redis.call('HMGET', KEYS[1], 'tenantId', old .. 'absoluteExpiresAtMs', old .. 'status', old .. 'authLevel',
  old .. 'createdAtMs', 'createdAtMs', old .. 'groups')
if not v[2] or not v[1] or v[1] ~= ARGV[1] then
  return {'NOT_FOUND'}
end
if redis.call('HEXISTS', KEYS[1], new .. 'absoluteExpiresAtMs') == 1 then
  return {'EXISTS'}
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local nowS = string.format('%d', now)

-- Move every field with its own TTL; the fields written now take the session's.
local names = {}
for i, name in ipairs(SESSION_FIELDS) do
  names[i] = old .. name
end
local vals = redis.call('HMGET', KEYS[1], unpack(names))
local ttls = redis.call('HPTTL', KEYS[1], 'FIELDS', #names, unpack(names))
local pttl = ttls[1] -- absoluteExpiresAtMs's: the session's
local set = {lastRotatedAtMs = nowS, updatedAtMs = nowS}
local out, byTTL = {}, {}
for i, name in ipairs(SESSION_FIELDS) do
  local val, ttl = vals[i], ttls[i]
  if set[name] then
    val, ttl = set[name], pttl
  end
  if val then
    out[#out + 1] = new .. name
    out[#out + 1] = val
    if ttl > 0 then
      local group = byTTL[ttl] or {}
      group[#group + 1] = new .. name
      byTTL[ttl] = group
    end
  end
end
redis.call('HDEL', KEYS[1], unpack(names))
redis.call('HSET', KEYS[1], 'updatedAtMs', nowS, unpack(out))
for ttl, group in pairs(byTTL) do
  redis.call('HPEXPIRE', KEYS[1], string.format('%d', ttl), 'FIELDS', #group, unpack(group))
end
local abs = tonumber(v[2]) or (now + math.max(pttl, 0))
if redis.call('PTTL', KEYS[1]) < abs - now then
  redis.call('PEXPIRE', KEYS[1], string.format('%d', math.max(abs - now, 1)))
end
return {'OK', now, pttl, v[3], v[4], v[5] or v[6], v[2], v[7]}
