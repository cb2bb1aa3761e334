-- idem_release.lua: drop the caller's own PENDING marker after a refused or failed request, so
-- the key can be used again (only successful responses are stored for replay).
-- KEYS[1] marker string  <p>:v1:idem:{<tenantTag>}:<operation>:<sha256(key)>
-- ARGV[1] the PENDING value this request claimed
-- Reply: integer 1 when released, 0 when the marker is no longer this request's
if redis.call('GET', KEYS[1]) ~= ARGV[1] then
  return 0
end
redis.call('DEL', KEYS[1])
return 1
