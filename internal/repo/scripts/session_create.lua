-- session_create.lua: write a new session hash with its TTL and add it to the user's device
-- index, in one atomic step. It touches only its two KEYS, which carry the user's tag, so it
-- runs unchanged on a cluster; while the user's slot migrates Redis refuses the whole call
-- (TRYAGAIN/ASK, answered 503) and nothing is written.
-- The per-user bound counts index members after dropping those past their absolute deadline
-- (their scores, against Redis TIME). Members whose hash ended earlier (idle timeout) still count
-- here: when the index is full the script answers 'full', and the caller drops the members whose
-- hash is confirmed gone (single-key reads, then session_prune.lua, which declares every key it
-- checks) and runs this script once more.
-- KEYS[1]: session hash <prefix>:v1:sess:{<userTag>}:<idPart>
-- KEYS[2]: device index <prefix>:v1:sessions:{<userTag>} (sorted set: idPart -> absoluteExpiresAtMs)
-- ARGV[1]: maximum index members (sessions) per user
-- ARGV[2]: idle timeout in milliseconds
-- ARGV[3]: absolute timeout in milliseconds
-- ARGV[4]: idPart (the index member)
-- ARGV[5..]: field, value pairs (userId, tenantId, schemaVersion, and only when given: device
--          label and hashes, status when it is not ACTIVE, authLevel when it is not BASIC,
--          loginPending '1' when the login waits for MFA, idleTimeoutMs when it is not the
--          default); the
--          timestamps createdAtMs, updatedAtMs, absoluteExpiresAtMs are added here from the
--          server's clock. failedMfaAttempts, lastSeenAtMs and lastRotatedAtMs are written only
--          once they differ from their defaults (0, createdAtMs, createdAtMs: by a wrong MFA code,
--          an idle refresh, a rotation); no hash of the token is stored.
-- Reply: {'ok', nowMs, ttlMs, absoluteExpiresAtMs} | {'full', members} | {'exists'}
if redis.call('EXISTS', KEYS[1]) == 1 then
  return {'exists'}
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local idle = tonumber(ARGV[2])
local abs = now + tonumber(ARGV[3])

redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', string.format('%d', now))
local members = redis.call('ZCARD', KEYS[2])
if members >= tonumber(ARGV[1]) then
  return {'full', members}
end

local fields = {}
for i = 5, #ARGV do
  fields[#fields + 1] = ARGV[i]
end
local nowS = string.format('%d', now)
for _, kv in ipairs({
  {'createdAtMs', nowS}, {'updatedAtMs', nowS}, {'absoluteExpiresAtMs', string.format('%d', abs)},
}) do
  fields[#fields + 1] = kv[1]
  fields[#fields + 1] = kv[2]
end
local ttl = math.min(idle, abs - now)
redis.call('HSET', KEYS[1], unpack(fields))
redis.call('PEXPIRE', KEYS[1], string.format('%d', ttl))

-- The index lives as long as its longest-lived member can.
redis.call('ZADD', KEYS[2], string.format('%d', abs), ARGV[4])
if redis.call('PTTL', KEYS[2]) < abs - now then
  redis.call('PEXPIRE', KEYS[2], string.format('%d', abs - now))
end
return {'ok', now, ttl, abs}
