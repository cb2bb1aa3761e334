-- session_u_verify.lua: the per-user layout's MFA verify (docs/KEYS.md, "Sessions"), in one
-- atomic step: count the attempt in the user's fixed-window counter, compare the code's HMAC
-- with the live challenge's ("<idPart>:mfaChallengeId", "<idPart>:mfaCodeMac"), and on success
-- step the session up (MFA_VERIFIED, authLevel MFA, mfaVerifiedAtMs, lastRotatedAtMs,
-- updatedAtMs), delete the challenge, complete a login that waited for MFA (loginPending is
-- deleted) and replace the token's verifier MAC in "<idPart>:live" (a new token, the same id);
-- the fields written take the session's field TTL (that of its live marker). Until this
-- succeeds, a session created with mfaRequired is not logged in; after it, only the new token
-- is accepted, and the used challenge is gone: a replayed verify answers NO_CHALLENGE. A wrong
-- code increments "<idPart>:failedMfaAttempts" and writes
-- "<idPart>:updatedAtMs", both with the session's field TTL. Every write sets the hash's
-- updatedAtMs; the key's TTL is raised (never shortened) to the absolute deadline.
-- Comparison: the gateway sends the HMAC of the candidate code, never the code. Both strings are
-- keyed MACs, not secrets, and the comparison below visits every byte whatever the mismatch,
-- so neither the code nor the MAC leaks through timing; the attempt counter bounds guessing.
-- KEYS[1]: the user's hash <prefix>:v1:sess:{<userTag>}, which also takes the events
--          (session_event_hash): session.mfa_verified, session.mfa_failed, and
--          session.mfa_locked when that failure used the window's last attempt
-- KEYS[2]: attempt counter <prefix>:v1:rl:{<userTag>}:mfa (same slot). While the user's slot
--          migrates, a first attempt in a window (no counter yet) is refused with TRYAGAIN.
-- ARGV[1]: tenant of the caller (another tenant's session answers 'NOT_FOUND', uncounted)
-- ARGV[2]: challenge id, ARGV[3]: HMAC of the candidate code (base64url)
-- ARGV[4]: attempt limit, ARGV[5]: window ms, ARGV[6]: counter buffer ms
-- ARGV[7]: idPart, ARGV[8]: the new token's verifier MAC
-- ARGV[9]: the event envelope (session_event)
-- Reply: {'NOT_FOUND'} |
--        {'LIMITED', count, resetMs} |
--        {'NO_CHALLENGE', count, resetMs, hadChallenge (0|1)} |            (no live challenge with this id)
--        {'WRONG_CODE', count, resetMs, failedMfaAttempts} |
--        {'OK', count, resetMs, nowMs, pttlMs, absoluteExpiresAtMs, groups}   (groups nil when none)

--#include mfa_code
--#include session_part
--#include key_ttl
--#include session_event_hash

local old = ARGV[7] .. ':' -- field name prefix
local s, abs, created = part_load(ARGV[1], old, old .. 'mfaChallengeId', old .. 'mfaCodeMac', old .. 'mfaChallengeCreatedAtMs',
  old .. 'groups')
s = s or {}
local a = mfa_attempt(s[1], s[3], s[4], s[5], ARGV[2], KEYS[2], ARGV[4], ARGV[5], ARGV[6])
if a.refused then
  return a.refused
end
local now, nowS, count, reset = a.now, a.nowS, a.count, a.reset
local pttl = part_idle(old)
if not mfa_same(s[4], ARGV[3]) then
  local failed = redis.call('HINCRBY', KEYS[1], old .. 'failedMfaAttempts', 1)
  part_write(pttl, old, nowS, 'updatedAtMs', nowS)
  part_expire(pttl, old, 'failedMfaAttempts')
  mfa_failed_events(session_event, failed, count, ARGV[4], reset)
  return {'WRONG_CODE', count, reset, failed}
end

-- Step up: the fields written take the session's field TTL; the challenge's go.
redis.call('HDEL', KEYS[1], old .. 'mfaChallengeId', old .. 'mfaCodeMac', old .. 'mfaChallengeCreatedAtMs', old .. 'loginPending')
part_write(pttl, old, nowS, 'status', 'MFA_VERIFIED', 'authLevel', 'MFA', 'mfaVerifiedAtMs', nowS, 'updatedAtMs', nowS,
  'lastRotatedAtMs', nowS, LIVE, live_value(created, ARGV[8], abs))
key_ttl_at_least(KEYS[1], abs - now)
session_event('session.mfa_verified', nil, {})
return {'OK', count, reset, now, pttl, abs, s[6]}
