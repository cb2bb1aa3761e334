-- idem_claim.lua: claim an Idempotency-Key for one request. A fresh claim is SET NX PX with the
-- marker TTL; a takeover (ARGV[7] set) replaces a PENDING marker whose in-flight lease has
-- passed, only if it still holds exactly the value the caller read, keeping its TTL.
-- KEYS[1] marker string  <p>:v1:idem:{<tenantTag>}:<operation>:<sha256(key)>
-- ARGV[1] owner (random)  ARGV[2] request hash  ARGV[3] resource id planned for the create
-- ARGV[4] lease ms  ARGV[5] TTL ms  ARGV[6] schemaVersion  ARGV[7] expected current value ('' = fresh)
-- ARGV[8] createdAtMs to keep on a takeover ('' = now)
-- Reply: {'CLAIMED', value, nowMs} | {'EXISTS', current value or '', nowMs}  (nowMs an integer,
-- the server's clock)
-- ARGV[1..3] are [A-Za-z0-9_-] (checked by the caller), so the JSON below needs no escaping.
local t = redis.call('TIME')
local nowMs = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local now = string.format('%.0f', nowMs)
local created = ARGV[8]
if created == '' then created = now end
local value = string.format(
  '{"schemaVersion":%s,"state":"PENDING","owner":"%s","requestHash":"%s","resourceId":"%s","leaseUntilMs":%s,"createdAtMs":%s,"updatedAtMs":%s}',
  ARGV[6], ARGV[1], ARGV[2], ARGV[3], string.format('%.0f', nowMs + tonumber(ARGV[4])), created, now)
if ARGV[7] == '' then
  if redis.call('SET', KEYS[1], value, 'NX', 'PX', ARGV[5]) then
    return {'CLAIMED', value, nowMs}
  end
  return {'EXISTS', redis.call('GET', KEYS[1]) or '', nowMs}
end
local cur = redis.call('GET', KEYS[1])
if cur ~= ARGV[7] then
  return {'EXISTS', cur or '', nowMs}
end
redis.call('SET', KEYS[1], value, 'XX', 'KEEPTTL')
return {'CLAIMED', value, nowMs}
