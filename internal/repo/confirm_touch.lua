-- confirm_touch.lua: rewrite a key's expiry unchanged, a write Redis propagates (as PEXPIREAT)
-- that moves the connection's replication offset as the durable marker does, on the key a
-- confirmed read found (writes.go, confirmRead).
-- KEYS[1] the key the read found (any type)
-- Reply: 1 touched | 0 no such key, or no TTL (nothing written)
local at = redis.call('PEXPIRETIME', KEYS[1])
if at > 0 then
  redis.call('PEXPIREAT', KEYS[1], at)
  return 1
end
return 0
