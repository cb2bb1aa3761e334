-- outbox_ack.lua: delete the entries the relay copied from a user's outbox, and the outbox
-- itself once empty (an empty stream still costs a few KiB), in one step: an event appended
-- meanwhile keeps the outbox.
-- KEYS[1]: the user's outbox <prefix>:v1:evoutbox:{<userTag>}
-- ARGV[1..]: the outbox ids copied
-- Reply: {'OK', entries left}
redis.call('XDEL', KEYS[1], unpack(ARGV))
local left = redis.call('XLEN', KEYS[1])
if left == 0 then
  redis.call('DEL', KEYS[1])
end
return {'OK', left}
