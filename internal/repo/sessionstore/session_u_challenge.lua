-- session_u_challenge.lua: the per-user layout's MFA challenge start (docs/KEYS.md, "Sessions").
-- The challenge id and the HMAC of the code become the session's fields "<idPart>:mfaChallengeId"
-- and "<idPart>:mfaCodeMac" with their own field TTL: the challenge's, never past what is left of
-- the session's idle window. A new challenge replaces a live one. The session becomes
-- MFA_REQUIRED: "<idPart>:status", "<idPart>:mfaChallengeCreatedAtMs" and "<idPart>:updatedAtMs"
-- are written with the session's field TTL (that of its live marker); the hash's
-- updatedAtMs is set.
-- KEYS[1]: the user's hash <prefix>:v1:sess:{<userTag>}, which also takes the event
--          session.mfa_challenged (session_event_hash)
-- ARGV[1]: tenant of the caller (another tenant's session answers 'NOT_FOUND')
-- ARGV[2]: idPart
-- ARGV[3]: challenge id, ARGV[4]: HMAC of the code (base64url)
-- ARGV[5]: challenge TTL in milliseconds
-- ARGV[6]: the event envelope (session_event)
-- Reply: {'NOT_FOUND'} | {'OK', nowMs, expiresAtMs}

--#include session_part
--#include session_clock
--#include session_event_hash

local p = ARGV[2] .. ':' -- field name prefix
if not part_load(ARGV[1], p) then
  return {'NOT_FOUND'}
end
local now, nowS = session_now()
local idle = part_idle(p)
local ttl = tonumber(ARGV[5])
if idle > 0 and idle < ttl then
  ttl = idle
end
part_write(ttl, p, nowS, 'mfaChallengeId', ARGV[3], 'mfaCodeMac', ARGV[4])
part_write(idle, p, nowS, 'status', 'MFA_REQUIRED', 'mfaChallengeCreatedAtMs', nowS, 'updatedAtMs', nowS)
session_event('session.mfa_challenged', nil, {expiresAtMs = now + ttl})
return {'OK', now, now + ttl}
