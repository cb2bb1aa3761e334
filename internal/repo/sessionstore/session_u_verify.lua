-- session_u_verify.lua: the per-user layout's MFA verify (docs/KEYS.md, "Sessions"), in one
-- atomic step: count the attempt in the user's fixed-window counter, compare the code's HMAC
-- with the live challenge's ("<idPart>:mfaChallengeId", "<idPart>:mfaCodeMac"), and on success
-- step the session up (MFA_VERIFIED, authLevel MFA, mfaVerifiedAtMs, lastRotatedAtMs,
-- updatedAtMs), delete the challenge, complete a login that waited for MFA (loginPending is
-- deleted) and rotate the token: every other field "<oldIdPart>:<name>" moves to
-- "<newIdPart>:<name>" with its own remaining field TTL, the fields written take the session's
-- (that of its absoluteExpiresAtMs), and nothing is left under the old id part. Until this
-- succeeds, a session created with mfaRequired is not logged in; after it, only the new token
-- exists. A wrong code increments "<idPart>:failedMfaAttempts" and writes
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
-- ARGV[7]: old idPart, ARGV[8]: new idPart
-- Reply: {'NOT_FOUND'} | {'EXISTS'} |
--        {'LIMITED', count, resetMs} |
--        {'NO_CHALLENGE', count, resetMs, hadChallenge (0|1)} |            (no live challenge with this id)
--        {'WRONG_CODE', count, resetMs, failedMfaAttempts} |
--        {'OK', count, resetMs, nowMs, pttlMs, absoluteExpiresAtMs, groups}   (groups nil when none)

--#include session_fields

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
local oldPart, newPart = ARGV[7], ARGV[8]
local old, new = oldPart .. ':', newPart .. ':'
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

if redis.call('HEXISTS', KEYS[1], new .. 'absoluteExpiresAtMs') == 1 then
  return {'EXISTS'}
end
-- Step up and move every other field with its own TTL; the fields written now take the session's.
local names = {}
for i, name in ipairs(SESSION_FIELDS) do
  names[i] = old .. name
end
local vals = redis.call('HMGET', KEYS[1], unpack(names))
local ttls = redis.call('HPTTL', KEYS[1], 'FIELDS', #names, unpack(names))
local set = {status = 'MFA_VERIFIED', authLevel = 'MFA', mfaVerifiedAtMs = nowS, updatedAtMs = nowS, lastRotatedAtMs = nowS}
local drop = {mfaChallengeId = true, mfaCodeMac = true, mfaChallengeCreatedAtMs = true, loginPending = true}
local out, byTTL = {}, {}
for i, name in ipairs(SESSION_FIELDS) do
  local val, ttl = vals[i], ttls[i]
  if set[name] then
    val, ttl = set[name], pttl
  end
  if val and not drop[name] then
    out[#out + 1] = new .. name
    out[#out + 1] = val
    if ttl > 0 then
      local group = byTTL[ttl] or {}
      group[#group + 1] = new .. name
      byTTL[ttl] = group
    end
  end
end
redis.call('HDEL', KEYS[1], unpack(names))
redis.call('HSET', KEYS[1], 'updatedAtMs', nowS, unpack(out))
for ttl, group in pairs(byTTL) do
  redis.call('HPEXPIRE', KEYS[1], string.format('%d', ttl), 'FIELDS', #group, unpack(group))
end
local abs = tonumber(s[2]) or (now + math.max(pttl, 0))
if redis.call('PTTL', KEYS[1]) < abs - now then
  redis.call('PEXPIRE', KEYS[1], string.format('%d', math.max(abs - now, 1)))
end
return {'OK', count, reset, now, pttl, abs, s[6]}
