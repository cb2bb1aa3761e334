-- session_verify.lua: verify an MFA code in one atomic step: count the attempt in the user's
-- fixed-window counter, compare the code's HMAC with the live challenge's, and on success step
-- the session up (MFA_VERIFIED, authLevel MFA, mfaVerifiedAtMs, updatedAtMs), delete the
-- challenge, complete a login that waited for MFA (loginPending is deleted) and replace the
-- token's verifier (verifierMac: a new token, the same session id). Until this succeeds, a
-- session created with mfaRequired is not logged in; after it, only the new token is accepted
-- (the write invalidates every gateway's kept copy), and the used challenge is gone: a replayed
-- verify answers NO_CHALLENGE.
-- Comparison: the gateway sends the HMAC of the candidate code, never the code. Both strings are
-- keyed MACs, not secrets, and the comparison below visits every byte whatever the mismatch,
-- so neither the code nor the MAC leaks through timing; the attempt counter bounds guessing.
-- KEYS[1]: session hash      <prefix>:v1:sess:{<userTag>}:<idPart>
-- KEYS[2]: attempt counter   <prefix>:v1:rl:{<userTag>}:mfa
-- KEYS[3]: challenge key     <prefix>:v1:mfa:{<userTag>}:<idPart> (fallback mode only)
-- ARGV[1]: tenant of the caller (another tenant's session answers 'NOT_FOUND', uncounted)
-- ARGV[2]: where the challenge lives: field | key
-- ARGV[3]: challenge id, ARGV[4]: HMAC of the candidate code (base64url)
-- ARGV[5]: attempt limit, ARGV[6]: window ms, ARGV[7]: counter buffer ms
-- ARGV[8]: the new token's verifier MAC
-- ARGV[9]: the event envelope (session_event)
-- KEYS[4]: the user's event outbox (session_event): session.mfa_verified, session.mfa_failed, and
--          session.mfa_locked when that failure used the window's last attempt
-- failedMfaAttempts is created by the first
-- wrong code (HINCRBY), never written as 0.
-- Reply: {'NOT_FOUND'} |
--        {'LIMITED', count, resetMs} |
--        {'NO_CHALLENGE', count, resetMs, hadChallenge (0|1)} |            (no live challenge with this id)
--        {'WRONG_CODE', count, resetMs, failedMfaAttempts} |
--        {'OK', count, resetMs, nowMs, pttlMs, absoluteExpiresAtMs, groups}   (groups nil when none)

--#include mfa_code
--#include session_event_stream

local s = redis.call('HMGET', KEYS[1], 'tenantId', 'absoluteExpiresAtMs', 'mfaChallengeId', 'mfaCodeMac', 'mfaChallengeCreatedAtMs', 'groups')
local cid, mac = s[3], s[4]
if ARGV[2] == 'key' then
  local c = redis.call('HMGET', KEYS[3], 'challengeId', 'codeMac')
  cid, mac = c[1], c[2]
end
local a = mfa_attempt(s[1] and s[1] == ARGV[1], cid, mac, s[5], ARGV[3], KEYS[2], ARGV[5], ARGV[6], ARGV[7])
if a.refused then
  return a.refused
end
local now, nowS, count, reset = a.now, a.nowS, a.count, a.reset
if not mfa_same(mac, ARGV[4]) then
  local failed = redis.call('HINCRBY', KEYS[1], 'failedMfaAttempts', 1)
  redis.call('HSET', KEYS[1], 'updatedAtMs', nowS)
  mfa_failed_events(session_event, failed, count, ARGV[5], reset)
  return {'WRONG_CODE', count, reset, failed}
end

redis.call('HSET', KEYS[1], 'status', 'MFA_VERIFIED', 'authLevel', 'MFA', 'mfaVerifiedAtMs', nowS,
  'updatedAtMs', nowS, 'lastRotatedAtMs', nowS, 'verifierMac', ARGV[8])
redis.call('HDEL', KEYS[1], 'mfaChallengeId', 'mfaCodeMac', 'mfaChallengeCreatedAtMs', 'loginPending')
redis.call('DEL', KEYS[3])
session_event('session.mfa_verified', nil, {})
local pttl = redis.call('PTTL', KEYS[1])
local abs = tonumber(s[2]) or (now + math.max(pttl, 0))
return {'OK', count, reset, now, pttl, abs, s[6]}
