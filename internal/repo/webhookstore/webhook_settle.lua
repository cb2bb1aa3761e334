-- webhook_settle.lua: record an event's delivery to a webhook and, when the outcome is final
-- (delivered or failed), acknowledge the entry in the webhook's consumer group: one step, so
-- an entry is never acknowledged without its record. Only the lease's holder may (a deliverer
-- that lost the lease writes nothing); a ping's record (holder '') needs no lease. The records
-- keep the newest ARGV[7]; times are Redis's.
-- KEYS[1] lease             <p>:v1:webhooklease:{<tenantTag>}:<webhookId>
-- KEYS[2] delivery records  <p>:v1:webhookdeliveries:{<tenantTag>}:<webhookId>  (field: message key)
-- KEYS[3] their order       <p>:v1:webhookdeliveries:{<tenantTag>}:<webhookId>:recent  (score updatedAtMs)
-- KEYS[4] event stream      <p>:v1:events:{<tenantTag>}
-- ARGV[1] holder ('' for a ping)  ARGV[2] group (webhookId)  ARGV[3] stream entry id or ping id
-- ARGV[4] record (JSON)  ARGV[5] '1' to acknowledge  ARGV[6] ms until the next attempt (-1: none)
-- ARGV[7] records kept  ARGV[8] records TTL ms
-- Reply: {'OK'} | {'STALE'} the lease is another's
if ARGV[1] ~= '' and redis.call('GET', KEYS[1]) ~= ARGV[1] then
  return {'STALE'}
end
local t = redis.call('TIME')
local nowN = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local now = string.format('%.0f', nowN)
local nextAt = '0'
if tonumber(ARGV[6]) >= 0 then
  nextAt = string.format('%.0f', nowN + tonumber(ARGV[6]))
end
redis.call('HSET', KEYS[2], ARGV[3], now .. '|' .. nextAt .. '|' .. ARGV[4])
redis.call('ZADD', KEYS[3], now, ARGV[3])
local extra = redis.call('ZCARD', KEYS[3]) - tonumber(ARGV[7])
if extra > 0 then
  local old = redis.call('ZPOPMIN', KEYS[3], extra)
  for i = 1, #old, 2 do
    redis.call('HDEL', KEYS[2], old[i])
  end
end
redis.call('PEXPIRE', KEYS[2], ARGV[8])
redis.call('PEXPIRE', KEYS[3], ARGV[8])
if ARGV[5] == '1' then
  redis.pcall('XACK', KEYS[4], ARGV[2], ARGV[3])
end
return {'OK'}
