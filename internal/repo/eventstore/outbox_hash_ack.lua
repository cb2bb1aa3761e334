-- outbox_hash_ack.lua: after relay.lua copied a user's events first..last into the tenant's
-- stream, delete them from the user's session hash and move evHead past them, in one step (the
-- kit's snippet event_outbox). Once none is pending, the counters go too (evSeq, evHead: a
-- relayed user's hash holds what it held without events), and a hash that holds no session
-- field (every session field's name has a ':'; the user's own fields and the events' have
-- none) is deleted: its sessions ended while events waited (the session scripts delete such a
-- hash themselves when no event waits). Both only once evSeq is below now × 1000, so the
-- numbers the next events take are all greater and the relay's checkpoint never moves back.
-- KEYS[1]: the user's hash <prefix>:v1:sess:{<userTag>}
-- ARGV[1]: first, ARGV[2]: last (the numbers of the events copied; 0 0: none, only the clean-up)
-- Reply: {'OK', events still pending, ms to wait before the clean-up can run (0: done)}
--#include event_outbox
local first, last = tonumber(ARGV[1]), tonumber(ARGV[2])
local v = redis.call('HMGET', KEYS[1], EVENT_OUTBOX_HEAD, EVENT_OUTBOX_SEQ)
local head, seq = tonumber(v[1]), tonumber(v[2])
if not head or not seq then
  return {'OK', 0, 0}
end
if head <= last then
  local names = {}
  for n = math.max(first, head), last do
    names[#names + 1] = event_outbox_field(n)
  end
  if #names > 0 then
    redis.call('HDEL', KEYS[1], unpack(names))
  end
  head = last + 1
  redis.call('HSET', KEYS[1], EVENT_OUTBOX_HEAD, string.format('%d', head))
end
if head <= seq then
  return {'OK', seq - head + 1, 0}
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
if seq >= now * 1000 then
  return {'OK', 0, math.floor(seq / 1000) - now + 1}
end
for _, f in ipairs(redis.call('HKEYS', KEYS[1])) do
  if string.find(f, ':', 1, true) then
    redis.call('HDEL', KEYS[1], EVENT_OUTBOX_SEQ, EVENT_OUTBOX_HEAD)
    return {'OK', 0, 0}
  end
end
redis.call('DEL', KEYS[1])
return {'OK', 0, 0}
