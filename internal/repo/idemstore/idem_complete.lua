-- idem_complete.lua: replace the caller's own PENDING marker by the stored response, keeping
-- the marker's TTL. A marker taken over by another request (lease passed) is left alone.
-- KEYS[1] marker string  <p>:v1:idem:{<tenantTag>}:<operation>:<sha256(key)>
-- ARGV[1] the PENDING value this request claimed  ARGV[2] the DONE value (response envelope)
-- Reply: {'OK'} stored | {'STALE'} the marker no longer holds ARGV[1] (taken over or expired)
if redis.call('GET', KEYS[1]) ~= ARGV[1] then
  return {'STALE'}
end
redis.call('SET', KEYS[1], ARGV[2], 'XX', 'KEEPTTL')
return {'OK'}
