-- session_create.lua: write a new session hash with its TTL and add it to the user's device
-- index, in one atomic step. Both keys carry the user's tag, so this works on a cluster.
-- KEYS[1]: session hash    <prefix>:v1:session:{<userTag>}:<idPart>
-- KEYS[2]: device index    <prefix>:v1:sessions:{<userTag>} (sorted set: idPart -> absoluteExpiresAtMs)
-- ARGV[1]: session key base, <prefix>:v1:session:{<userTag>}: (must carry KEYS[2]'s tag); index
--          members whose hash is gone are pruned through it before the bound is checked
-- ARGV[2]: maximum live sessions per user
-- ARGV[3]: idle timeout in milliseconds
-- ARGV[4]: absolute timeout in milliseconds
-- ARGV[5]: idPart (the index member)
-- ARGV[6..]: field, value pairs (userId, tenantId, status, authLevel, tokenHash, schemaVersion,
--          device hashes, ...); the timestamps are added here from the server's clock
-- Reply: {'ok', nowMs, ttlMs, absoluteExpiresAtMs} | {'bound', liveCount} | {'exists'}
local tag = string.match(KEYS[2], '{[^}]*}')
if not tag or not string.find(ARGV[1], tag, 1, true) or not string.find(KEYS[1], tag, 1, true) then
  return redis.error_reply('ERR session_create: keys must share one hash tag')
end
if redis.call('EXISTS', KEYS[1]) == 1 then
  return {'exists'}
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local idle = tonumber(ARGV[3])
local abs = now + tonumber(ARGV[4])

-- Prune: members past their absolute deadline, then members whose hash expired (idle) or vanished.
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', string.format('%d', now))
local members = redis.call('ZRANGE', KEYS[2], 0, -1)
local live = 0
for _, m in ipairs(members) do
  if redis.call('EXISTS', ARGV[1] .. m) == 1 then
    live = live + 1
  else
    redis.call('ZREM', KEYS[2], m)
  end
end
if live >= tonumber(ARGV[2]) then
  return {'bound', live}
end

local fields = {}
for i = 6, #ARGV do
  fields[#fields + 1] = ARGV[i]
end
local nowS = string.format('%d', now)
for _, kv in ipairs({
  {'createdAtMs', nowS}, {'updatedAtMs', nowS}, {'lastSeenAtMs', nowS}, {'lastRotatedAtMs', nowS},
  {'absoluteExpiresAtMs', string.format('%d', abs)}, {'idleTimeoutMs', string.format('%d', idle)},
}) do
  fields[#fields + 1] = kv[1]
  fields[#fields + 1] = kv[2]
end
local ttl = math.min(idle, abs - now)
redis.call('HSET', KEYS[1], unpack(fields))
redis.call('PEXPIRE', KEYS[1], string.format('%d', ttl))

-- The index lives as long as its longest-lived member can.
redis.call('ZADD', KEYS[2], string.format('%d', abs), ARGV[5])
if redis.call('PTTL', KEYS[2]) < abs - now then
  redis.call('PEXPIRE', KEYS[2], string.format('%d', abs - now))
end
return {'ok', now, ttl, abs}
