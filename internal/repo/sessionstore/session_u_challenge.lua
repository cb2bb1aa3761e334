-- session_u_challenge.lua: the per-user layout's MFA challenge start (docs/KEYS.md, "Sessions").
-- The challenge id and the HMAC of the code become the session's fields "<idPart>:mfaChallengeId"
-- and "<idPart>:mfaCodeMac" with their own field TTL: the challenge's, never past what is left of
-- the session's idle window. A new challenge replaces a live one. The session becomes
-- MFA_REQUIRED: "<idPart>:status", "<idPart>:mfaChallengeCreatedAtMs" and "<idPart>:updatedAtMs"
-- are written with the session's field TTL (that of its absoluteExpiresAtMs); the hash's
-- updatedAtMs is set.
-- KEYS[1]: the user's hash <prefix>:v1:sess:{<userTag>}
--          (the only key: a single-key script is served while the user's slot migrates)
-- ARGV[1]: tenant of the caller (another tenant's session answers 'NOT_FOUND')
-- ARGV[2]: idPart
-- ARGV[3]: challenge id, ARGV[4]: HMAC of the code (base64url)
-- ARGV[5]: challenge TTL in milliseconds
-- Reply: {'NOT_FOUND'} | {'OK', nowMs, expiresAtMs}
-- Field names, not keys: every key touched is in KEYS.
local part = ARGV[2]
local p = part .. ':'
local v = redis.call('HMGET', KEYS[1], 'tenantId', p .. 'absoluteExpiresAtMs')
if not v[2] or not v[1] or v[1] ~= ARGV[1] then
  return {'NOT_FOUND'}
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local nowS = string.format('%d', now)
-- The session's field TTL: what is left of its idle window (-1: none, corrupt but bounded by
-- the key's TTL).
local idle = redis.call('HPTTL', KEYS[1], 'FIELDS', 1, p .. 'absoluteExpiresAtMs')[1]
local ttl = tonumber(ARGV[5])
if idle > 0 and idle < ttl then
  ttl = idle
end
redis.call('HSET', KEYS[1], p .. 'mfaChallengeId', ARGV[3], p .. 'mfaCodeMac', ARGV[4],
  p .. 'status', 'MFA_REQUIRED', p .. 'mfaChallengeCreatedAtMs', nowS, p .. 'updatedAtMs', nowS, 'updatedAtMs', nowS)
redis.call('HPEXPIRE', KEYS[1], string.format('%d', ttl), 'FIELDS', 2, p .. 'mfaChallengeId', p .. 'mfaCodeMac')
if idle > 0 then
  redis.call('HPEXPIRE', KEYS[1], string.format('%d', idle), 'FIELDS', 3, p .. 'status', p .. 'mfaChallengeCreatedAtMs', p .. 'updatedAtMs')
end
return {'OK', now, now + ttl}
