-- idem_release.lua: drop the caller's own PENDING marker after a refused or failed request, so
-- the key can be used again (only successful responses are stored for replay).
-- KEYS[1] marker string  <p>:v1:idem:{<tenantTag>}:<operation>:<sha256(key)>
-- KEYS[2] the tenant's quota set <p>:v1:quota:{<tenantTag>}:idem (the marker's member leaves it)
-- ARGV[1] the PENDING value this request claimed  ARGV[2] the marker's member in KEYS[2]
-- Reply: {'OK'} released | {'STALE'} the marker no longer holds ARGV[1] (taken over or expired)
if redis.call('GET', KEYS[1]) ~= ARGV[1] then
  return {'STALE'}
end
redis.call('DEL', KEYS[1])
redis.call('ZREM', KEYS[2], ARGV[2])
return {'OK'}
