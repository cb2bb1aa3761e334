-- idem_claim.lua: claim an Idempotency-Key for one request. A fresh claim is SET NX PX with the
-- marker TTL, counted in the tenant's quota set in the same step (expired members pruned by
-- Redis time first; a full set refuses and writes nothing); a takeover (ARGV[7] set) replaces
-- a PENDING marker whose in-flight lease has passed, only if it still holds exactly the value
-- the caller read, keeping its TTL (and its place in the set).
-- KEYS[1] marker string  <p>:v1:idem:{<tenantTag>}:<operation>:<sha256(key)>
-- KEYS[2] quota set      <p>:v1:quota:{<tenantTag>}:idem  (member <operation>:<sha256(key)>,
--         score the marker's expiry in ms)
-- ARGV[1] owner (random)  ARGV[2] request hash  ARGV[3] resource id planned for the create
-- ARGV[4] lease ms  ARGV[5] TTL ms  ARGV[6] schemaVersion  ARGV[7] expected current value ('' = fresh)
-- ARGV[8] createdAtMs to keep on a takeover ('' = now)
-- ARGV[9] the tenant's quota of live markers  ARGV[10] the marker's member in KEYS[2]
-- Reply: {'CLAIMED', value, nowMs} | {'EXISTS', current value or '', nowMs}  (nowMs an integer,
-- the server's clock) | {'QUOTA', ms until the earliest live marker expires}
-- ARGV[1..3] are [A-Za-z0-9_-] (checked by the caller), so the JSON below needs no escaping.
--#include tenant_quota
local t = redis.call('TIME')
local nowMs = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local now = string.format('%.0f', nowMs)
local created = ARGV[8]
if created == '' then created = now end
local value = string.format(
  '{"schemaVersion":%s,"state":"PENDING","owner":"%s","requestHash":"%s","resourceId":"%s","leaseUntilMs":%s,"createdAtMs":%s,"updatedAtMs":%s}',
  ARGV[6], ARGV[1], ARGV[2], ARGV[3], string.format('%.0f', nowMs + tonumber(ARGV[4])), created, now)
if ARGV[7] == '' then
  local cur = redis.call('GET', KEYS[1])
  if cur then
    return {'EXISTS', cur, nowMs}
  end
  local wait = quota_full(KEYS[2], nowMs, tonumber(ARGV[9]))
  if wait then return {'QUOTA', wait} end
  local ttl = tonumber(ARGV[5])
  redis.call('SET', KEYS[1], value, 'PX', ttl)
  quota_hold(KEYS[2], ARGV[10], string.format('%.0f', nowMs + ttl), ttl)
  return {'CLAIMED', value, nowMs}
end
local cur = redis.call('GET', KEYS[1])
if cur ~= ARGV[7] then
  return {'EXISTS', cur or '', nowMs}
end
redis.call('SET', KEYS[1], value, 'XX', 'KEEPTTL')
return {'CLAIMED', value, nowMs}
