-- outbox_hash_read.lua: the relay's read of a user's pending session events in the user's
-- session hash (the per-user layout; the kit's snippet event_outbox), writing nothing.
-- KEYS[1]: the user's hash <prefix>:v1:sess:{<userTag>}
-- ARGV[1]: at most this many events
-- Reply: {'OK'} (none pending) |
--        {'OK', first, last, <value of event first>, ..., <value of event last>}
--        (numbers as decimal strings; '' for an event whose field expired)
--#include event_outbox
local v = redis.call('HMGET', KEYS[1], EVENT_OUTBOX_HEAD, EVENT_OUTBOX_SEQ)
local head, seq = tonumber(v[1]), tonumber(v[2])
if not head or not seq or head > seq then
  return {'OK'}
end
local last = math.min(seq, head + tonumber(ARGV[1]) - 1)
local names = {}
for n = head, last do
  names[#names + 1] = event_outbox_field(n)
end
local out = {'OK', string.format('%d', head), string.format('%d', last)}
for _, x in ipairs(redis.call('HMGET', KEYS[1], unpack(names))) do
  out[#out + 1] = x or ''
end
return out
