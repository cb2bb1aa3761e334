-- session_migrate.lua: move a user's sessions from the per-session layout (one hash per
-- session and the user's device index, written by a per-session gateway) into the user's hash
-- of the per-user layout, in one atomic step (docs/KEYS.md, "Sessions"). The caller reads the
-- device index first and passes every member's hash in KEYS, so the script touches only
-- declared keys (a slot in migration refuses the whole call, never a partial view).
--
-- Each live legacy session becomes the fields "<idPart>:<name>" of the user's hash, for the
-- names of the per-session layout (SESSION_FIELDS; tokenHash and unknown names are dropped),
-- values unchanged, "<idPart>:createdAtMs" kept explicitly (the hash's own createdAtMs is the
-- migration's instant). Every field gets the legacy key's remaining TTL as its field TTL, except
-- the challenge's mfaChallengeId and mfaCodeMac, which keep their own remaining field TTL (never
-- past the session's). The key's TTL is raised (never shortened) to the latest absolute deadline.
-- The user's fields (userId, tenantId, schemaVersion, createdAtMs) are written when the hash
-- lacks them; updatedAtMs is set when a session moved. Then the legacy hashes and the index are
-- deleted. A member whose hash is gone (or past its deadline) is dropped; a legacy session that
-- cannot be read as the user's (userId or tenantId missing or another's, createdAtMs or
-- absoluteExpiresAtMs missing, a schema version neither ARGV[1] nor the one before, not a
-- hash) is dropped too and counted as corrupt: it was never served, and no reader of the
-- per-user layout finds it under the user's defaults either.
--
-- A member of the index that was not passed joined it after the caller's read: the script
-- answers 'RETRY' without writing and the caller reads again. Run again (another gateway
-- migrating the same user, after this one), it finds neither the index nor the legacy hashes
-- and changes nothing.
-- KEYS[1]: the user's hash <prefix>:v1:sess:{<userTag>}
-- KEYS[2]: the device index <prefix>:v1:sessions:{<userTag>}
-- KEYS[3..n+2]: the legacy session hashes <prefix>:v1:sess:{<userTag>}:<idPart> of the members read
-- ARGV[1]: schema version (written as the hash's when it has none)
-- ARGV[2..n+1]: the members' idParts, in the order of KEYS[3..n+2]
-- Reply: {'OK', sessions moved, legacy sessions dropped as corrupt} |
--        {'RETRY', index members not passed}

-- BEGIN session_fields
local SESSION_FIELDS = {'absoluteExpiresAtMs', 'createdAtMs', 'updatedAtMs', 'status', 'authLevel', 'lastSeenAtMs', 'lastRotatedAtMs', 'mfaVerifiedAtMs', 'idleTimeoutMs', 'deviceLabel', 'ipHash', 'userAgentHash', 'failedMfaAttempts', 'loginPending', 'mfaChallengeCreatedAtMs', 'mfaChallengeId', 'mfaCodeMac'}
local SESSION_TTL_FIELDS = {'absoluteExpiresAtMs', 'createdAtMs', 'updatedAtMs', 'status', 'authLevel', 'lastSeenAtMs', 'lastRotatedAtMs', 'mfaVerifiedAtMs', 'idleTimeoutMs', 'deviceLabel', 'ipHash', 'userAgentHash', 'failedMfaAttempts', 'loginPending', 'mfaChallengeCreatedAtMs'}
-- END session_fields

local n = #ARGV - 1
if n < 0 or #KEYS ~= n + 2 then
  return redis.error_reply('ERR session_migrate: KEYS do not match the members')
end
local passed = {}
for i = 1, n do
  passed[ARGV[i + 1]] = true
end
local unknown = 0
for _, m in ipairs(redis.call('ZRANGE', KEYS[2], 0, -1)) do
  if not passed[m] then
    unknown = unknown + 1
  end
end
if unknown > 0 then
  return {'RETRY', unknown}
end

local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local nowS = string.format('%d', now)
local schema = tonumber(ARGV[1])
local user = redis.call('HMGET', KEYS[1], 'userId', 'tenantId', 'schemaVersion', 'createdAtMs')
local uid, tid = user[1], user[2]
local moved, corrupt, latest = 0, 0, 0

-- Read every legacy session first: when the hash holds no user yet, the user is the one most
-- legacy sessions name (the tag derives from tenant and user, so they all should; a session
-- naming another is corrupt, and one corrupt session must not make the others so).
local legacy = {}
local votes, best, wantUid, wantTid = {}, 0, uid, tid
for i = 1, n do
  local key = KEYS[i + 2]
  local pttl = redis.call('PTTL', key)
  if pttl ~= -2 then
    local h = {}
    local isHash = redis.call('TYPE', key)['ok'] == 'hash'
    if isHash then
      local flat = redis.call('HGETALL', key)
      for j = 1, #flat, 2 do
        h[flat[j]] = flat[j + 1]
      end
    end
    legacy[i] = {h = h, pttl = pttl, isHash = isHash}
    if not uid and h['userId'] and h['tenantId'] then
      local who = h['userId'] .. '\n' .. h['tenantId']
      votes[who] = (votes[who] or 0) + 1
      if votes[who] > best then
        best = votes[who]
        wantUid, wantTid = h['userId'], h['tenantId']
      end
    end
  end
end

for i = 1, n do
  local key, part = KEYS[i + 2], ARGV[i + 1]
  local l = legacy[i]
  if l then
    local h, pttl, isHash = l.h, l.pttl, l.isHash
    local abs = tonumber(h['absoluteExpiresAtMs'])
    local sv = tonumber(h['schemaVersion'])
    if not isHash or not h['userId'] or not h['tenantId'] or not h['createdAtMs'] or not abs
      or (sv ~= schema and sv ~= schema - 1)
      or h['userId'] ~= wantUid or h['tenantId'] ~= wantTid then
      corrupt = corrupt + 1
    else
      local ttl = pttl
      if ttl < 0 then -- a hash without a TTL: until its absolute deadline
        ttl = abs - now
      end
      ttl = math.min(ttl, abs - now)
      if ttl > 0 then
        if not uid then
          -- The user's fields, once (those the hash holds are kept: its sessions read them).
          uid, tid = h['userId'], h['tenantId']
          redis.call('HSET', KEYS[1], 'userId', uid, 'tenantId', tid, 'schemaVersion', user[3] or ARGV[1], 'createdAtMs', user[4] or nowS)
        end
        -- The challenge's own remaining TTL (-1: none of its own, so the session's).
        local chal = {}
        if h['mfaChallengeId'] or h['mfaCodeMac'] then
          local c = redis.call('HPTTL', key, 'FIELDS', 2, 'mfaChallengeId', 'mfaCodeMac')
          chal['mfaChallengeId'], chal['mfaCodeMac'] = c[1], c[2]
        end
        -- An id already in the user's hash (never expected: ids are random) is replaced whole.
        local names = {}
        for j, name in ipairs(SESSION_FIELDS) do
          names[j] = part .. ':' .. name
        end
        redis.call('HDEL', KEYS[1], unpack(names))
        local fields, same = {}, {}
        for _, name in ipairs(SESSION_FIELDS) do
          local v = h[name]
          local own = chal[name]
          if v and (own == nil or own ~= 0) then
            fields[#fields + 1] = part .. ':' .. name
            fields[#fields + 1] = v
            if own == nil or own < 0 or own >= ttl then
              same[#same + 1] = part .. ':' .. name
            end
          end
        end
        redis.call('HSET', KEYS[1], unpack(fields))
        redis.call('HPEXPIRE', KEYS[1], string.format('%d', ttl), 'FIELDS', #same, unpack(same))
        for name, own in pairs(chal) do
          if h[name] and own > 0 and own < ttl then
            redis.call('HPEXPIRE', KEYS[1], string.format('%d', own), 'FIELDS', 1, part .. ':' .. name)
          end
        end
        moved = moved + 1
        latest = math.max(latest, abs)
      end
    end
  end
end

if moved > 0 then
  redis.call('HSET', KEYS[1], 'updatedAtMs', nowS)
  if redis.call('PTTL', KEYS[1]) < latest - now then
    redis.call('PEXPIRE', KEYS[1], string.format('%d', latest - now))
  end
end
for i = 3, #KEYS do
  redis.call('DEL', KEYS[i])
end
redis.call('DEL', KEYS[2])
return {'OK', moved, corrupt}
