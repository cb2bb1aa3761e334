-- session_u_authorize.lua: the hot path's Redis side in the per-user layout (docs/KEYS.md,
-- "Sessions"). Read one session's fields from the user's hash (HMGET, never HGETALL) and slide
-- its idle window when little of it is left, never past the absolute deadline: every field of
-- the session that shares its idle deadline gets the new one (HPEXPIREAT), the MFA challenge's
-- two keep their own. As session_authorize.lua: without the client-side cache every
-- authentication runs this; with it, only the ones the gateway finds due for a refresh
-- (checked again here, on Redis's clock; the write invalidates every replica's copy).
-- The session is live iff its marker <idPart>:live exists (session_live); its field TTL is the
-- end of the idle window.
-- KEYS[1]: the user's hash <prefix>:v1:sess:{<userTag>}, the only key: a single-key script is
--          served while the user's slot migrates.
-- ARGV[1]: idPart
-- ARGV[2]: refresh fraction: refresh only when less than this share of the idle window is left
-- ARGV[3]: the implicit idle timeout in milliseconds (repo.ImplicitIdle), for sessions without
--          <idPart>:idleTimeoutMs
-- ARGV[4]: the presented token's verifier MAC: the window slides only when it is the session's
--          session's (in <idPart>:live; the caller compares what it reads back in constant time)
-- ARGV[5..]: the fields to answer with, as named in the user's hash (the user's own, or
--          '<idPart>:<name>'); the caller classifies what it reads. The refresh decision reads
--          its own (userId, tenantId, schemaVersion, the session's live marker and idleTimeoutMs), so what
--          the caller asks for never changes what is extended.
-- Reply: {'NOT_FOUND'} |
--        {'OK', nowMs, pttlMs, refreshed (0|1), absoluteExpiresAtMs (0 when unreadable),
--         expireAtMs (HPEXPIRETIME of the marker: its readers derive the last use from it),
--         <one value per ARGV[5..] field, nil when absent>}

--#include session_fields
--#include session_live
--#include idle_refresh
--#include key_ttl
--#include session_clock

-- (field names of the session, not keys: every key is in KEYS)
local part = ARGV[1]
local p = part .. ':'
-- HPTTL answers -2 for a missing field (an empty or nil reply for a missing key on some
-- versions).
local r = redis.call('HPTTL', KEYS[1], 'FIELDS', 1, p .. LIVE)
local pttl = -2
if type(r) == 'table' and r[1] then
  pttl = tonumber(r[1])
end
if pttl == -2 then
  return {'NOT_FOUND'}
end
local d = redis.call('HMGET', KEYS[1], 'userId', 'tenantId', 'schemaVersion', p .. LIVE, p .. 'idleTimeoutMs')
d[4], d[6] = live_split(d[4])
local now, nowS = session_now()
local abs, idle, want = idle_refresh_want(d, ARGV[4], ARGV[3], ARGV[2], pttl, now)
local refreshed = 0
if want then -- (want >= 1: an expiry not after now would delete the fields)
  -- The last use is the new expiry minus idle while the window is not capped by the
  -- deadline: lastSeenAtMs is stored only when it is (docs/KEYS.md, "Sessions").
  if want < idle then
    redis.call('HSET', KEYS[1], p .. 'lastSeenAtMs', nowS, 'updatedAtMs', nowS)
  else
    redis.call('HDEL', KEYS[1], p .. 'lastSeenAtMs')
    redis.call('HSET', KEYS[1], 'updatedAtMs', nowS)
  end
  local names = {}
  for i, name in ipairs(SESSION_TTL_FIELDS) do
    names[i] = p .. name
  end
  -- At now + want on this clock (TIME), exactly: the expiry minus idle is this instant.
  redis.call('HPEXPIREAT', KEYS[1], string.format('%d', now + want), 'FIELDS', #names, unpack(names))
  -- The key outlives every field (it has no TTL only if something else wrote it).
  key_ttl_at_least(KEYS[1], abs - now)
  pttl = want
  refreshed = 1
end
local exp = redis.call('HPEXPIRETIME', KEYS[1], 'FIELDS', 1, p .. LIVE)[1]
local out = {'OK', now, pttl, refreshed, math.floor(abs or 0), exp}
return idle_refresh_answer(out, 5)
