-- session_create.lua: write a new session hash with its TTL and add it to the user's device
-- index, in one atomic step; at the per-user cap, first make room in that same step: drop index
-- members whose session is gone, then (policy 'evict') evict the least recently used sessions.
-- Every key it touches is declared in KEYS and carries the user's tag, so it runs unchanged on
-- a cluster; while the user's slot migrates Redis refuses the whole call (TRYAGAIN/ASK, answered
-- 503) and nothing is written.
--
-- The cap counts index members after dropping those past their absolute deadline (scores,
-- against Redis TIME). Under the cap the create needs only KEYS[1..2]. At the cap, a call that
-- names no candidates answers 'RETRY' with the index's members; the caller calls again naming
-- them all as candidates (their session keys, and in the fallback mode their challenge keys,
-- declared in KEYS). That call drops the candidates whose hash no longer exists (an idle
-- timeout ends a hash before its index member), then, if the index is still full:
--   * 'refuse': answers 'BOUND' (only those dropped members were written);
--   * 'evict': evicts as many live candidates as it takes to make room, least recently used
--     first — last use is the newest of lastSeenAtMs (written by the hot path's idle refresh),
--     lastRotatedAtMs (rotation, MFA verify) and createdAtMs, in ms; ties (the same ms) go to
--     the member first in index order (soonest absolute deadline, then idPart); a hash that
--     cannot be read (wrong type) or holds none of them counts as never used. A member added
--     since the caller's read (a session created or rotated meanwhile) is not a candidate: it
--     is newer than any candidate's last use but for races within one round trip. When the
--     candidates cannot make room (the index changed since the read), it writes nothing and
--     answers 'RETRY' again.
-- Eviction deletes the session hash (every gateway that cached it gets Redis's invalidation
-- push), its challenge key and its index member, exactly as a revocation does.
-- KEYS[1]: session hash <prefix>:v1:sess:{<userTag>}:<idPart>
-- KEYS[2]: device index <prefix>:v1:sessions:{<userTag>} (sorted set: idPart -> absoluteExpiresAtMs)
-- KEYS[3..n+2]: the candidates' session hashes <prefix>:v1:sess:{<userTag>}:<idPart> (n = ARGV[6])
-- KEYS[n+3..2n+2]: their challenge keys <prefix>:v1:mfa:{<userTag>}:<idPart>, only when ARGV[7]
--          is '1' (fallback mode)
-- KEYS[last]: the user's event outbox (session_event): session.created, session.evicted
-- ARGV[1]: maximum index members (sessions) per user
-- ARGV[2]: idle timeout in milliseconds
-- ARGV[3]: absolute timeout in milliseconds
-- ARGV[4]: idPart (the index member)
-- ARGV[5]: policy at the cap: evict | refuse
-- ARGV[6]: n, the number of candidates (0 on the first call)
-- ARGV[7]: '1' when the candidates' challenge keys follow their session keys, else '0'
-- ARGV[8..n+7]: the candidates' idParts, in the order of KEYS[3..n+2]
-- ARGV[n+8..]: field, value pairs (userId, tenantId, schemaVersion, verifierMac — the token's
--          verifier as a keyed MAC, never the token or an unkeyed hash —, and only when given: device
--          label and hashes, status when it is not ACTIVE, authLevel when it is not BASIC,
--          loginPending '1' when the login waits for MFA, idleTimeoutMs when it is not the
--          default); the
--          timestamps createdAtMs, updatedAtMs, absoluteExpiresAtMs are added here from the
--          server's clock. failedMfaAttempts, lastSeenAtMs and lastRotatedAtMs are written only
--          once they differ from their defaults (0, createdAtMs, createdAtMs: by a wrong MFA code,
--          an idle refresh, a rotation).
-- ARGV[last]: the event envelope (session_event)
-- Reply: {'OK', nowMs, ttlMs, absoluteExpiresAtMs, <idPart of each evicted session>...} |
--        {'RETRY', members, <idPart>...} (at the cap: call again with these candidates) |
--        {'BOUND', live members} (policy refuse) | {'EXISTS'}

--#include create_window
--#include session_keys_check
--#include session_event_stream

-- retry answers 'RETRY' with the index's members (the caller names them as candidates).
local function retry(members)
  local out = {'RETRY', members}
  for _, m in ipairs(redis.call('ZRANGE', KEYS[2], 0, -1)) do
    out[#out + 1] = m
  end
  return out
end

local n = tonumber(ARGV[6]) or -1
local withChallenges = ARGV[7] == '1'
local refused = session_keys_check(2, n, withChallenges, 'ERR session_create: KEYS do not match the candidates')
if refused then
  return refused
end
if redis.call('EXISTS', KEYS[1]) == 1 then
  return {'EXISTS'}
end
local now, nowS, max, abs, ttl = create_window()

redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', nowS)
local members = redis.call('ZCARD', KEYS[2])
local evicted = {}
if members >= max then
  if n == 0 then
    return retry(members)
  end
  -- Classify the candidates that are still members: gone (hash ended) or live (with last use).
  local gone, live = {}, {}
  for i = 1, n do
    local part = ARGV[7 + i]
    if redis.call('ZSCORE', KEYS[2], part) then
      if redis.call('EXISTS', KEYS[2 + i]) == 0 then
        gone[#gone + 1] = part
      else
        local used = 0
        local v = redis.pcall('HMGET', KEYS[2 + i], 'lastSeenAtMs', 'lastRotatedAtMs', 'createdAtMs')
        if type(v) == 'table' and not v.err then
          for j = 1, 3 do
            local x = tonumber(v[j])
            if x and x > used then
              used = x
            end
          end
        end
        live[#live + 1] = {i = i, used = used}
      end
    end
  end
  local need = members - max + 1 - #gone
  if need > 0 and ARGV[5] == 'evict' and need > #live then
    -- The index changed since the caller read it: nothing written, read again.
    return retry(members)
  end
  for _, part in ipairs(gone) do
    redis.call('ZREM', KEYS[2], part)
  end
  if need > 0 then
    if ARGV[5] ~= 'evict' then
      return {'BOUND', members - #gone}
    end
    table.sort(live, function(a, b)
      if a.used ~= b.used then
        return a.used < b.used
      end
      return a.i < b.i
    end)
    for k = 1, need do
      local i = live[k].i
      redis.call('DEL', KEYS[2 + i])
      if withChallenges then
        redis.call('DEL', KEYS[2 + n + i])
      end
      redis.call('ZREM', KEYS[2], ARGV[7 + i])
      evicted[#evicted + 1] = ARGV[7 + i]
      session_event('session.evicted', ARGV[7 + i], {evictedBy = session_id(ARGV[4])})
    end
  end
end

local fields, f = {}, {}
for i = 8 + n, #ARGV - 1, 2 do
  fields[#fields + 1] = ARGV[i]
  fields[#fields + 1] = ARGV[i + 1]
  f[ARGV[i]] = ARGV[i + 1]
end
for _, kv in ipairs({
  {'createdAtMs', nowS}, {'updatedAtMs', nowS}, {'absoluteExpiresAtMs', string.format('%d', abs)},
}) do
  fields[#fields + 1] = kv[1]
  fields[#fields + 1] = kv[2]
end
redis.call('HSET', KEYS[1], unpack(fields))
redis.call('PEXPIRE', KEYS[1], string.format('%d', ttl))

redis.call('ZADD', KEYS[2], string.format('%d', abs), ARGV[4])
session_event('session.created', ARGV[4], {authLevel = f.authLevel or 'BASIC', mfaRequired = f.loginPending == '1'})
return create_done(KEYS[2], now, ttl, abs, evicted)
