-- refusal_window: add a gateway's refusals of one window to the window's shared total and,
-- once the window's grace has passed, write its one event (ratelimit.refused, quota.refused;
-- docs/EVENTS.md "Refusals"). Every gateway that refused in the window calls it: the first
-- call at or after the due time writes the event with every count added so far and marks the
-- window written, in the same step; any later call finds the mark.
-- KEYS[1]: the window's total <prefix>:v1:refusals:{<tenantTag>}:<windowTag> (a hash: count,
--          writtenMs once its event is written, schemaVersion, createdAtMs, updatedAtMs)
-- KEYS[2]: the tenant's stream <prefix>:v1:events:{<tenantTag>}
-- ARGV[1]: the envelope (events.EnvelopeOf)
-- ARGV[2]: the event type; ARGV[3]: its subject
-- ARGV[4]: the event's data without the window (JSON object)
-- ARGV[5]: the window's start (ms), ARGV[6]: its length (ms)
-- ARGV[7]: the due time (ms): the window's end and its grace
-- ARGV[8]: when the total expires (ms, absolute; after any gateway stops calling)
-- ARGV[9]: how many refusals to add (≥ 0)
-- Reply: {'OK', event id, now} this call wrote the event | {'NOT_DUE', now} counted, the
-- event waits for the due time | {'ALREADY', now} the event was written before: ARGV[9] is in none
--#include server_time
--#include event_append
local now, nowS = server_window(0)
local n = tonumber(ARGV[9])
local cur = redis.call('HMGET', KEYS[1], 'count', 'writtenMs')
if cur[2] then
  return {'ALREADY', now}
end
local total = tonumber(cur[1]) or 0
if n > 0 then
  if cur[1] then
    total = redis.call('HINCRBY', KEYS[1], 'count', n)
    redis.call('HSET', KEYS[1], 'updatedAtMs', nowS)
  else
    total = n
    -- schemaVersion mirrors repo.SchemaVersion (a test keeps them equal).
    redis.call('HSET', KEYS[1], 'count', string.format('%d', n), 'schemaVersion', '2',
      'createdAtMs', nowS, 'updatedAtMs', nowS)
    redis.call('PEXPIREAT', KEYS[1], ARGV[8])
  end
end
if now < tonumber(ARGV[7]) then
  return {'NOT_DUE', now}
end
if total == 0 then
  -- Nothing counted (the total expired): nothing to write.
  return {'ALREADY', now}
end
local data = cjson.decode(ARGV[4])
data.windowStartMs = tonumber(ARGV[5])
data.windowMs = tonumber(ARGV[6])
data.count = total
local id = event_append(KEYS[2], event_env(ARGV[1]), now, ARGV[2], ARGV[3], data)
redis.call('HSET', KEYS[1], 'writtenMs', nowS, 'updatedAtMs', nowS)
return {'OK', id, now}
