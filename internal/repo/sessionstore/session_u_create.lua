-- session_u_create.lua: the per-user layout's create (docs/KEYS.md, "Sessions"). Write a new
-- session's fields into the user's hash, each with the session's idle window as its field TTL,
-- in one atomic step; at the per-user cap, first make room in that same step: evict the least
-- recently used sessions (policy 'evict') or refuse (policy 'refuse'). The user's sessions are
-- fields of one key, so the count, the eviction and the write see one consistent state, on a
-- cluster too; an idle-expired session's fields are gone with their TTL, so nothing needs
-- pruning before the count.
--
-- Last use is the newest of <part>:lastSeenAtMs (stored by an idle refresh the absolute
-- deadline capped), the expiry of its live marker <part>:live minus the session's idle timeout
-- (an idle refresh's instant: it stores no lastSeenAtMs otherwise), <part>:lastRotatedAtMs
-- (rotation, MFA verify) and the session's createdAtMs (in the marker), in ms; ties go to the
-- soonest absolute deadline, then the smaller idPart. A session whose values do not parse counts
-- as never used.
-- KEYS[1]: the user's hash <prefix>:v1:sess:{<userTag>}, which also takes the events
--          session.created and session.evicted (session_event_hash)
-- ARGV[1]: maximum sessions per user
-- ARGV[2]: idle timeout in milliseconds
-- ARGV[3]: absolute timeout in milliseconds
-- ARGV[4]: idPart
-- ARGV[5]: policy at the cap: evict | refuse
-- ARGV[6]: '1' when this call may evict; '0' makes a call at the cap under 'evict' answer
--          'RETRY' without writing (the caller calls again as a durable write)
-- ARGV[7]: userId, ARGV[8]: tenantId, ARGV[9]: schema version
-- ARGV[10]: the implicit idle timeout in milliseconds (repo.ImplicitIdle), for sessions without
--          <idPart>:idleTimeoutMs
-- ARGV[11]: the token's verifier as a keyed MAC (never the token or an unkeyed hash): the live
--          marker <idPart>:live holds it with createdAtMs (session_live)
-- ARGV[12..]: the session's own field, value pairs, unprefixed (device label and hashes, status
--          when it is not ACTIVE, authLevel when it is not BASIC, loginPending '1', idleTimeoutMs
--          when it is not the implicit one); the live marker (createdAtMs from the server's
--          clock) is added.
-- ARGV[last]: the event envelope (session_event)
-- Reply: {'OK', nowMs, ttlMs, absoluteExpiresAtMs, <idPart of each evicted session>...} |
--        {'RETRY', live sessions} (at the cap, evict policy, ARGV[6] '0') |
--        {'BOUND', live sessions} (policy refuse) | {'EXISTS'} |
--        {'CORRUPT'} (the hash holds another user: nothing written)

--#include session_fields
--#include session_live
--#include create_window
--#include session_event_hash

local MARK = ':' .. LIVE
local part = ARGV[4]
if redis.call('HEXISTS', KEYS[1], part .. MARK) == 1 then
  return {'EXISTS'}
end
-- (evSeq with the user's fields: the events' append needs no read of its own, and their TTL
-- is raised with the hash's own, in create_done)
local user = redis.call('HMGET', KEYS[1], 'userId', 'tenantId', EVENT_OUTBOX_SEQ)
if (user[1] and user[1] ~= ARGV[7]) or (user[2] and user[2] ~= ARGV[8]) then
  return {'CORRUPT'}
end
event_outbox_known(user[3])
event_outbox_defer_ttl()
local now, nowS, max, abs, ttl = create_window()

-- The live sessions: fields whose TTL passed are never returned.
local parts = {}
for _, f in ipairs(redis.call('HKEYS', KEYS[1])) do
  if #f > #MARK and string.sub(f, -#MARK) == MARK then
    parts[#parts + 1] = string.sub(f, 1, #f - #MARK)
  end
end
local evicted = {}
if #parts >= max then
  if ARGV[5] ~= 'evict' then
    return {'BOUND', #parts}
  end
  if ARGV[6] ~= '1' then
    return {'RETRY', #parts}
  end
  local live = {}
  for _, p in ipairs(parts) do
    local v = redis.call('HMGET', KEYS[1], p .. ':lastSeenAtMs', p .. ':lastRotatedAtMs', p .. MARK, p .. ':idleTimeoutMs')
    local used = 0
    local deadline, _, created = live_split(v[3])
    -- The marker's expiry minus idle, as readers take it (perUserLastSeen): not when the
    -- session's lastSeenAtMs, marker or idle timeout do not parse (they refuse it as corrupt).
    local seen
    local exp = redis.call('HPEXPIRETIME', KEYS[1], 'FIELDS', 1, p .. MARK)[1]
    local idle = tonumber(v[4] or ARGV[10])
    if exp > 0 and idle and idle > 0 and created and (not v[1] or tonumber(v[1])) then
      seen = exp - idle
    end
    -- (a numeric loop: ipairs stops at the first nil, and most sessions hold no lastSeenAtMs)
    local cand = {tonumber(v[1]), seen, tonumber(v[2]), created}
    for j = 1, 4 do
      local x = cand[j]
      if x and x > used then
        used = x
      end
    end
    live[#live + 1] = {part = p, used = used, abs = deadline or 0}
  end
  table.sort(live, function(a, b)
    if a.used ~= b.used then
      return a.used < b.used
    end
    if a.abs ~= b.abs then
      return a.abs < b.abs
    end
    return a.part < b.part
  end)
  for k = 1, #parts - max + 1 do
    local p = live[k].part
    local names = {}
    for i, name in ipairs(SESSION_FIELDS) do
      names[i] = p .. ':' .. name
    end
    redis.call('HDEL', KEYS[1], unpack(names))
    evicted[#evicted + 1] = p
    session_event('session.evicted', p, {evictedBy = session_id(part)})
  end
end

if not user[1] then
  -- A new hash, or one whose user fields are gone: the user's fields, once.
  redis.call('HSET', KEYS[1], 'userId', ARGV[7], 'tenantId', ARGV[8], 'schemaVersion', ARGV[9], 'createdAtMs', nowS)
end
local fields = {part .. MARK, live_value(now, ARGV[11], abs)}
local own = {}
for i = 12, #ARGV - 1, 2 do
  fields[#fields + 1] = part .. ':' .. ARGV[i] -- field name
  fields[#fields + 1] = ARGV[i + 1]
  own[ARGV[i]] = ARGV[i + 1]
end
redis.call('HSET', KEYS[1], 'updatedAtMs', nowS, unpack(fields))
local names = {}
for i = 1, #fields, 2 do
  names[#names + 1] = fields[i]
end
redis.call('HPEXPIRE', KEYS[1], string.format('%d', ttl), 'FIELDS', #names, unpack(names))
session_event('session.created', part, {authLevel = own.authLevel or 'BASIC', mfaRequired = own.loginPending == '1'})
return create_done(KEYS[1], now, ttl, abs, evicted, event_outbox_need)
