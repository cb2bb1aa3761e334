-- session_authorize.lua: the hot path's Redis side. Read a session's authorization and view
-- fields (HMGET, never HGETALL) and slide its idle window when little of it is left, never past
-- the absolute deadline. Without the client-side cache every authentication runs this; with it,
-- only the ones the gateway finds due for a refresh (everything is checked again here, on
-- Redis's clock, and the write invalidates every replica's cached copy).
-- The key derives from 108 bits of the token's SHA-256, so finding it proves the token: no hash
-- of the token is compared (an old hash's tokenHash field is not read).
-- KEYS[1]: session hash <prefix>:v1:sess:{<userTag>}:<idPart>
-- ARGV[1]: refresh fraction: refresh only when less than this share of the idle window is left
-- ARGV[2]: the implicit idle timeout in milliseconds (repo.ImplicitIdle, a constant), for
--          hashes without idleTimeoutMs (written only when a session's timeout is another one,
--          never by schema 1)
-- ARGV[3..]: the fields to read; the first seven are, in this order: userId, tenantId, status,
--          authLevel, absoluteExpiresAtMs, idleTimeoutMs, schemaVersion. status and authLevel
--          are written only once they differ from ACTIVE and BASIC (the caller applies those
--          defaults), so completeness rests on userId, tenantId, schemaVersion and the deadlines.
-- Reply: {'NOT_FOUND'} |
--        {'OK', nowMs, pttlMs, refreshed (0|1), <one value per ARGV[3..] field, nil when absent>}
--        (the caller classifies found / old schema / corrupt)
local v = redis.call('HMGET', KEYS[1], unpack(ARGV, 3))
if not (v[1] or v[2] or v[3] or v[4] or v[5] or v[6] or v[7]) then
  return {'NOT_FOUND'}
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local pttl = redis.call('PTTL', KEYS[1])
local abs = tonumber(v[5])
local idle = tonumber(v[6])
if not v[6] then
  idle = tonumber(ARGV[2])
end
local refreshed = 0
-- Refresh only a complete hash: a corrupt one is refused by the caller and never extended.
if v[1] and v[2] and v[7] and abs and idle and idle > 0 and abs > now then
  if pttl < idle * tonumber(ARGV[1]) then
    local want = math.min(idle, abs - now)
    if want > pttl then
      redis.call('PEXPIRE', KEYS[1], string.format('%d', want))
      redis.call('HSET', KEYS[1], 'lastSeenAtMs', string.format('%d', now))
      pttl = want
      refreshed = 1
    end
  end
end
local out = {'OK', now, pttl, refreshed}
for i = 1, #v do
  out[#out + 1] = v[i]
end
return out
