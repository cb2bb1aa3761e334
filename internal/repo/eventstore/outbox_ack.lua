-- outbox_ack.lua: delete the entries the relay copied from a user's outbox, and the outbox
-- itself once empty (an empty stream still costs a few KiB), in one step: an event appended
-- meanwhile keeps the outbox. The relay's checkpoint relies on outbox ids only growing, and a
-- stream made anew numbers from Redis's clock: the outbox is deleted only once its last id's
-- millisecond has passed, so the next outbox's ids are all greater.
-- KEYS[1]: the user's outbox <prefix>:v1:evoutbox:{<userTag>}
-- ARGV[1..]: the outbox ids copied (none: only delete an empty outbox)
-- Reply: {'OK', entries left}
if #ARGV > 0 then
  redis.call('XDEL', KEYS[1], unpack(ARGV))
end
if redis.call('EXISTS', KEYS[1]) == 0 then
  return {'OK', 0}
end
local left = redis.call('XLEN', KEYS[1])
if left > 0 then
  return {'OK', left}
end
local info = redis.call('XINFO', 'STREAM', KEYS[1])
local last
for i = 1, #info - 1, 2 do
  if info[i] == 'last-generated-id' then
    last = tonumber(string.match(info[i + 1], '^(%d+)-'))
  end
end
local t = redis.call('TIME')
if last and last < tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000) then
  redis.call('DEL', KEYS[1])
end
return {'OK', 0}
