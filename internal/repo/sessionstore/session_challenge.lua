-- session_challenge.lua: start an MFA step-up. The challenge id and the HMAC of the code get
-- their own TTL, shorter than the session's: hash fields written with HSETEX (Redis 8) or
-- HSET+HEXPIRE in this one script (Redis 7.4), or a separate key with its own TTL (older
-- servers; same tag). A new challenge replaces a live one. The session becomes MFA_REQUIRED.
-- KEYS[1]: session hash  <prefix>:v1:sess:{<userTag>}:<idPart>
-- KEYS[2]: challenge key <prefix>:v1:mfa:{<userTag>}:<idPart> (used in fallback mode only)
-- ARGV[1]: tenant of the caller (another tenant's session answers 'NOT_FOUND')
-- ARGV[2]: mode: hsetex | hexpire | fallback
-- ARGV[3]: challenge id, ARGV[4]: HMAC of the code (base64url)
-- ARGV[5]: challenge TTL in seconds
-- ARGV[6]: schema version (for the fallback key's hash)
-- ARGV[7]: the event envelope (session_event)
-- KEYS[3]: the user's event outbox (session_event): session.mfa_challenged
-- Reply: {'NOT_FOUND'} | {'OK', nowMs, expiresAtMs}

--#include session_clock
--#include session_event_stream

local tenant = redis.call('HGET', KEYS[1], 'tenantId')
if not tenant or tenant ~= ARGV[1] then
  return {'NOT_FOUND'}
end
local now, nowS = session_now()
local ttl = tonumber(ARGV[5])
local mode = ARGV[2]
if mode == 'hsetex' then
  redis.call('HSETEX', KEYS[1], 'EX', ttl, 'FIELDS', 2, 'mfaChallengeId', ARGV[3], 'mfaCodeMac', ARGV[4])
elseif mode == 'hexpire' then
  redis.call('HSET', KEYS[1], 'mfaChallengeId', ARGV[3], 'mfaCodeMac', ARGV[4])
  redis.call('HEXPIRE', KEYS[1], ttl, 'FIELDS', 2, 'mfaChallengeId', 'mfaCodeMac')
elseif mode == 'fallback' then
  redis.call('DEL', KEYS[2])
  redis.call('HSET', KEYS[2], 'challengeId', ARGV[3], 'codeMac', ARGV[4], 'schemaVersion', ARGV[6],
    'createdAtMs', nowS, 'updatedAtMs', nowS)
  redis.call('PEXPIRE', KEYS[2], ttl * 1000)
else
  return redis.error_reply('ERR session_challenge: unknown mode')
end
redis.call('HSET', KEYS[1], 'status', 'MFA_REQUIRED', 'mfaChallengeCreatedAtMs', nowS, 'updatedAtMs', nowS)
session_event('session.mfa_challenged', nil, {expiresAtMs = now + ttl * 1000})
return {'OK', now, now + ttl * 1000}
