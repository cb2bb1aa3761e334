-- outbox_ack.lua: delete the entries the relay copied from a user's outbox, and the outbox
-- itself once empty (an empty stream still costs a few KiB), in one step: an event appended
-- meanwhile keeps the outbox. The relay's checkpoint relies on outbox ids only growing, and a
-- stream made anew numbers from Redis's clock: the outbox is deleted only once its last id's
-- millisecond has passed, so the next outbox's ids are all greater.
-- KEYS[1]: the user's outbox <prefix>:v1:evoutbox:{<userTag>}
-- ARGV[1..]: the outbox ids copied (none: only delete an empty outbox)
-- Reply: {'OK', entries left, ms to wait before the empty outbox can be deleted (0: none)}
if #ARGV > 0 then
  redis.call('XDEL', KEYS[1], unpack(ARGV))
end
if redis.call('EXISTS', KEYS[1]) == 0 then
  return {'OK', 0, 0}
end
local left = redis.call('XLEN', KEYS[1])
if left > 0 then
  return {'OK', left, 0}
end
local info = redis.call('XINFO', 'STREAM', KEYS[1])
local last
for i = 1, #info - 1, 2 do
  if info[i] == 'last-generated-id' then
    last = tonumber(string.match(info[i + 1], '^(%d+)-'))
  end
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
if last and last >= now then
  return {'OK', 0, last - now + 1}
end
redis.call('DEL', KEYS[1])
return {'OK', 0, 0}
