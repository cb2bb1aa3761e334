-- touch.lua: rewrite a key's expiry unchanged (PEXPIREAT of its own PEXPIRETIME), a write Redis
-- propagates, so that the connection's replication offset covers everything the primary had
-- written when a confirmed read ran (Writes.Read), on the key the read found.
-- KEYS[1] the key read
-- Reply: 1, or 0 when the key has no expiry or is gone (nothing written).
local at = redis.call('PEXPIRETIME', KEYS[1])
if at > 0 then
  redis.call('PEXPIREAT', KEYS[1], at)
  return 1
end
return 0
