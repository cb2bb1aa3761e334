-- session_verify.lua: verify an MFA code in one atomic step: count the attempt in the user's
-- fixed-window counter, compare the code's HMAC with the live challenge's, and on success step
-- the session up (MFA_VERIFIED, authLevel MFA, mfaVerifiedAtMs, updatedAtMs), delete the
-- challenge, complete a login that waited for MFA (loginPending is deleted) and rotate the token
-- (the hash moves to the new token's key, keeping its TTL). Until this succeeds, a session
-- created with mfaRequired is not logged in; after it, only the new token exists, so no copy
-- cached before the verify can answer for it.
-- Comparison: the gateway sends the HMAC of the candidate code, never the code. Both strings are
-- keyed MACs, not secrets, and the comparison below visits every byte whatever the mismatch,
-- so neither the code nor the MAC leaks through timing; the attempt counter bounds guessing.
-- KEYS[1]: session hash      <prefix>:v1:sess:{<userTag>}:<idPart>
-- KEYS[2]: new session hash  <prefix>:v1:sess:{<userTag>}:<newIdPart> (target of the rotation)
-- KEYS[3]: device index      <prefix>:v1:sessions:{<userTag>}
-- KEYS[4]: attempt counter   <prefix>:v1:rl:{<userTag>}:mfa
-- KEYS[5]: challenge key     <prefix>:v1:mfa:{<userTag>}:<idPart> (fallback mode only)
-- ARGV[1]: tenant of the caller (another tenant's session answers 'NOT_FOUND', uncounted)
-- ARGV[2]: where the challenge lives: field | key
-- ARGV[3]: challenge id, ARGV[4]: HMAC of the candidate code (base64url)
-- ARGV[5]: attempt limit, ARGV[6]: window ms, ARGV[7]: counter buffer ms
-- ARGV[8]: old idPart, ARGV[9]: new idPart
-- The new key derives from the new token's SHA-256, so no hash of the token is stored.
-- failedMfaAttempts is created by the first
-- wrong code (HINCRBY), never written as 0.
-- Reply: {'NOT_FOUND'} | {'EXISTS'} |
--        {'LIMITED', count, resetMs} |
--        {'NO_CHALLENGE', count, resetMs, hadChallenge (0|1)} |            (no live challenge with this id)
--        {'WRONG_CODE', count, resetMs, failedMfaAttempts} |
--        {'OK', count, resetMs, nowMs, pttlMs, absoluteExpiresAtMs, groups}   (groups nil when none)

--#include fixed_window

local function same(a, b)
  if #a ~= #b then
    return false
  end
  local diff = 0
  for i = 1, #a do
    if string.byte(a, i) ~= string.byte(b, i) then
      diff = diff + 1
    end
  end
  return diff == 0
end

local s = redis.call('HMGET', KEYS[1], 'tenantId', 'absoluteExpiresAtMs', 'mfaChallengeId', 'mfaCodeMac', 'mfaChallengeCreatedAtMs', 'groups')
if not s[1] or s[1] ~= ARGV[1] then
  return {'NOT_FOUND'}
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local allowed, count, reset = fixed_window(KEYS[4], now, tonumber(ARGV[6]), tonumber(ARGV[7]), tonumber(ARGV[5]))
if allowed == 0 then
  return {'LIMITED', count, reset}
end

local cid, mac = s[3], s[4]
if ARGV[2] == 'key' then
  local c = redis.call('HMGET', KEYS[5], 'challengeId', 'codeMac')
  cid, mac = c[1], c[2]
end
if not cid or not mac or cid ~= ARGV[3] then
  local had = 0
  if s[5] then
    had = 1
  end
  return {'NO_CHALLENGE', count, reset, had}
end
if not same(mac, ARGV[4]) then
  local failed = redis.call('HINCRBY', KEYS[1], 'failedMfaAttempts', 1)
  redis.call('HSET', KEYS[1], 'updatedAtMs', string.format('%d', now))
  return {'WRONG_CODE', count, reset, failed}
end

if redis.call('EXISTS', KEYS[2]) == 1 then
  return {'EXISTS'}
end
local nowS = string.format('%d', now)
redis.call('HSET', KEYS[1], 'status', 'MFA_VERIFIED', 'authLevel', 'MFA', 'mfaVerifiedAtMs', nowS,
  'updatedAtMs', nowS, 'lastRotatedAtMs', nowS)
redis.call('HDEL', KEYS[1], 'mfaChallengeId', 'mfaCodeMac', 'mfaChallengeCreatedAtMs', 'loginPending')
redis.call('DEL', KEYS[5])
redis.call('RENAME', KEYS[1], KEYS[2])
local pttl = redis.call('PTTL', KEYS[2])
local abs = tonumber(s[2]) or (now + math.max(pttl, 0))
redis.call('ZREM', KEYS[3], ARGV[8])
-- The member's score is its absolute deadline plus half a millisecond: the mark of a member
-- born of a rotation, which a concurrent revoke-all must not leave behind (session_revoke_all.lua).
redis.call('ZADD', KEYS[3], string.format('%d.5', abs), ARGV[9])
if redis.call('PTTL', KEYS[3]) < abs - now then
  redis.call('PEXPIRE', KEYS[3], string.format('%d', math.max(abs - now, 1)))
end
return {'OK', count, reset, now, pttl, abs, s[6]}
