-- session_u_verify.lua: the per-user layout's MFA verify (docs/KEYS.md, "Sessions"), in one
-- atomic step: count the attempt in the user's fixed-window counter, compare the code's HMAC
-- with the live challenge's ("<idPart>:mfaChallengeId", "<idPart>:mfaCodeMac"), and on success
-- step the session up (MFA_VERIFIED, authLevel MFA, mfaVerifiedAtMs, lastRotatedAtMs,
-- updatedAtMs), delete the challenge, complete a login that waited for MFA (loginPending is
-- deleted) and replace the token's verifier ("<idPart>:verifierMac": a new token, the same id);
-- the fields written take the session's field TTL (that of its absoluteExpiresAtMs). Until this
-- succeeds, a session created with mfaRequired is not logged in; after it, only the new token
-- is accepted, and the used challenge is gone: a replayed verify answers NO_CHALLENGE. A wrong
-- code increments "<idPart>:failedMfaAttempts" and writes
-- "<idPart>:updatedAtMs", both with the session's field TTL. Every write sets the hash's
-- updatedAtMs; the key's TTL is raised (never shortened) to the absolute deadline.
-- Comparison: the gateway sends the HMAC of the candidate code, never the code. Both strings are
-- keyed MACs, not secrets, and the comparison below visits every byte whatever the mismatch,
-- so neither the code nor the MAC leaks through timing; the attempt counter bounds guessing.
-- KEYS[1]: the user's hash <prefix>:v1:sess:{<userTag>}
-- KEYS[2]: attempt counter <prefix>:v1:rl:{<userTag>}:mfa (same slot). While the user's slot
--          migrates, a first attempt in a window (no counter yet) is refused with TRYAGAIN.
-- ARGV[1]: tenant of the caller (another tenant's session answers 'NOT_FOUND', uncounted)
-- ARGV[2]: challenge id, ARGV[3]: HMAC of the candidate code (base64url)
-- ARGV[4]: attempt limit, ARGV[5]: window ms, ARGV[6]: counter buffer ms
-- ARGV[7]: idPart, ARGV[8]: the new token's verifier MAC
-- Reply: {'NOT_FOUND'} |
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

-- Field names, not keys: every key touched is in KEYS.
local part = ARGV[7]
local old = part .. ':'
local s = redis.call('HMGET', KEYS[1], 'tenantId', old .. 'absoluteExpiresAtMs', old .. 'mfaChallengeId',
  old .. 'mfaCodeMac', old .. 'mfaChallengeCreatedAtMs', old .. 'groups')
if not s[2] or not s[1] or s[1] ~= ARGV[1] then
  return {'NOT_FOUND'}
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local nowS = string.format('%d', now)
local allowed, count, reset = fixed_window(KEYS[2], now, tonumber(ARGV[5]), tonumber(ARGV[6]), tonumber(ARGV[4]))
if allowed == 0 then
  return {'LIMITED', count, reset}
end

local cid, mac = s[3], s[4]
if not cid or not mac or cid ~= ARGV[2] then
  local had = 0
  if s[5] then
    had = 1
  end
  return {'NO_CHALLENGE', count, reset, had}
end
-- The session's field TTL: what is left of its idle window (-1: none, corrupt but bounded by
-- the key's TTL).
local pttl = redis.call('HPTTL', KEYS[1], 'FIELDS', 1, old .. 'absoluteExpiresAtMs')[1]
if not same(mac, ARGV[3]) then
  local failed = redis.call('HINCRBY', KEYS[1], old .. 'failedMfaAttempts', 1)
  redis.call('HSET', KEYS[1], old .. 'updatedAtMs', nowS, 'updatedAtMs', nowS)
  if pttl > 0 then
    redis.call('HPEXPIRE', KEYS[1], string.format('%d', pttl), 'FIELDS', 2, old .. 'failedMfaAttempts', old .. 'updatedAtMs')
  end
  return {'WRONG_CODE', count, reset, failed}
end

-- Step up: the fields written take the session's field TTL; the challenge's go.
local set = {'status', 'MFA_VERIFIED', 'authLevel', 'MFA', 'mfaVerifiedAtMs', nowS, 'updatedAtMs', nowS,
  'lastRotatedAtMs', nowS, 'verifierMac', ARGV[8]}
local out, names = {}, {}
for i = 1, #set, 2 do
  out[#out + 1] = old .. set[i]
  out[#out + 1] = set[i + 1]
  names[#names + 1] = old .. set[i]
end
redis.call('HDEL', KEYS[1], old .. 'mfaChallengeId', old .. 'mfaCodeMac', old .. 'mfaChallengeCreatedAtMs', old .. 'loginPending')
redis.call('HSET', KEYS[1], 'updatedAtMs', nowS, unpack(out))
if pttl > 0 then
  redis.call('HPEXPIRE', KEYS[1], string.format('%d', pttl), 'FIELDS', #names, unpack(names))
end
local abs = tonumber(s[2]) or (now + math.max(pttl, 0))
if redis.call('PTTL', KEYS[1]) < abs - now then
  redis.call('PEXPIRE', KEYS[1], string.format('%d', math.max(abs - now, 1)))
end
return {'OK', count, reset, now, pttl, abs, s[6]}
