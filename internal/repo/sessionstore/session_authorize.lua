-- session_authorize.lua: the hot path's Redis side. Read a session's fields (HMGET, never
-- HGETALL) and slide its idle window when little of it is left, never past the absolute
-- deadline. Without the client-side cache every authentication runs this; with it, only the
-- ones the gateway finds due for a refresh (everything is checked again here, on Redis's
-- clock, and the write invalidates every replica's cached copy).
-- The key names the session (the token's selector); the token's verifier proves it: the window
-- slides only when the session's verifierMac is the presented one (ARGV[3]). The caller compares
-- the MAC it reads back in constant time and refuses any other.
-- KEYS[1]: session hash <prefix>:v1:sess:{<userTag>}:<idPart>
-- ARGV[1]: refresh fraction: refresh only when less than this share of the idle window is left
-- ARGV[2]: the implicit idle timeout in milliseconds (repo.ImplicitIdle, a constant), for
--          hashes without idleTimeoutMs (written only when a session's timeout is another one,
--          never by schema 1)
-- ARGV[3]: the presented token's verifier MAC
-- ARGV[4..]: the fields to answer with: the hot path's few, or the view's (the caller
--          classifies what it reads as found, old schema or corrupt). The refresh decision
--          reads its own (userId, tenantId, schemaVersion, absoluteExpiresAtMs,
--          idleTimeoutMs; status and authLevel for existence), so what the caller asks for
--          never changes what is extended.
-- Reply: {'NOT_FOUND'} |
--        {'OK', nowMs, pttlMs, refreshed (0|1), absoluteExpiresAtMs (0 when unreadable),
--         <one value per ARGV[4..] field, nil when absent>}

--#include idle_refresh
--#include session_clock

local pttl = redis.call('PTTL', KEYS[1])
if pttl == -2 then
  return {'NOT_FOUND'}
end
local d = redis.call('HMGET', KEYS[1], 'userId', 'tenantId', 'schemaVersion', 'absoluteExpiresAtMs', 'idleTimeoutMs',
  'verifierMac', 'status', 'authLevel')
-- Existence rests on the fields every session holds or its transitions write: a hash holding
-- none of them (stray fields only) is missing, not corrupt.
if not (d[1] or d[2] or d[3] or d[4] or d[5] or d[7] or d[8]) then
  return {'NOT_FOUND'}
end
local now, nowS = session_now()
local abs, _, want = idle_refresh_want(d, ARGV[3], ARGV[2], ARGV[1], pttl, now)
local refreshed = 0
if want then
  redis.call('PEXPIRE', KEYS[1], string.format('%d', want))
  redis.call('HSET', KEYS[1], 'lastSeenAtMs', nowS)
  pttl = want
  refreshed = 1
end
return idle_refresh_answer({'OK', now, pttl, refreshed, math.floor(abs or 0)}, 4)
