-- idem_abandon.lua: drop a PENDING claim whose reply the claimant never got (the claim call
-- timed out: it may have run, or may still run once Redis answers). Sent after the claim on the
-- same key, it runs after it, so the marker does not hold the key for a whole in-flight lease
-- against the client's retry. Only that owner's PENDING claim goes: never another request's
-- claim, never a stored (DONE) response.
-- KEYS[1] marker string  <p>:v1:idem:{<tenantTag>}:<operation>:<sha256(key)>
-- KEYS[2] the tenant's quota set <p>:v1:quota:{<tenantTag>}:idem (the marker's member leaves it)
-- ARGV[1] the owner the lost claim carried ([A-Za-z0-9_-], random)  ARGV[2] the marker's member
-- Reply: {'OK'} dropped | {'STALE'} no marker, or not a PENDING claim of ARGV[1]
local cur = redis.call('GET', KEYS[1])
if not cur or not string.find(cur, '"state":"PENDING","owner":"' .. ARGV[1] .. '"', 1, true) then
  return {'STALE'}
end
redis.call('DEL', KEYS[1])
redis.call('ZREM', KEYS[2], ARGV[2])
return {'OK'}
