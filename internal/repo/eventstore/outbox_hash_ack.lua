-- outbox_hash_ack.lua: the ack of a user's events whose last one ended a session (revoked,
-- logged out): after relay.lua copied the events first..last into the tenant's stream, delete
-- them from the user's session hash and, when the hash then holds no session (every session
-- field's name has a ':'; the user's own fields and the events' have none) and nothing keeps
-- it (event_outbox_keep: no event pending, evSeq below now × 1000), the hash itself, in one
-- step. The other acks are a plain HDEL (outbox_hash.go): a hash with a session lives on.
-- KEYS[1]: the user's hash <prefix>:v1:sess:{<userTag>}
-- ARGV[1]: first, ARGV[2]: last (the numbers of the events copied)
-- Reply: {'OK', 1 when the hash was deleted, else 0}
--#include event_outbox
local names = {}
for n = tonumber(ARGV[1]), tonumber(ARGV[2]) do
  names[#names + 1] = event_outbox_field(n)
end
redis.call('HDEL', KEYS[1], unpack(names))
if event_outbox_keep(KEYS[1]) then
  return {'OK', 0}
end
for _, f in ipairs(redis.call('HKEYS', KEYS[1])) do
  if string.find(f, ':', 1, true) then
    return {'OK', 0}
  end
end
redis.call('DEL', KEYS[1])
return {'OK', 1}
