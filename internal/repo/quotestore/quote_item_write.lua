-- quote_item_write.lua: add, replace or remove one line item of a DRAFT at an expected
-- stateVersion, recompute subtotalMinor (Σ quantity × unitPriceMinor over every line) and
-- totalMinor = subtotalMinor - discountMinor + taxMinor in the same step, bump stateVersion and
-- refresh the TTL of both keys (and the draft's score in its quota set), with quote.updated in
-- the tenant's event stream. Amounts are Lua
-- numbers (doubles): every intermediate result is refused above ARGV[11] (2^53-1), below which
-- double arithmetic on integers is exact.
-- KEYS[1] summary hash  <p>:v1:quote:{<tenantTag>}:<quoteId>
-- KEYS[2] items hash    KEYS[1] .. ':items'  (field = itemId, value = item JSON)
-- KEYS[3] quota set     <p>:v1:quota:{<tenantTag>}:quotes  (member quoteId, score expiresAtMs)
-- KEYS[4..8] the list indexes (quote_index: where, all, customer, status, channel)
-- KEYS[9] the tenant's event stream <p>:v1:events:{<tenantTag>}
-- ARGV[1] tenantId  ARGV[2] expected stateVersion (If-Match; '' matches any)  ARGV[3] 'put' | 'delete'
-- ARGV[4] itemId  ARGV[5] item JSON (put)  ARGV[6] quantity  ARGV[7] unitPriceMinor
-- ARGV[8] max items  ARGV[9] max item bytes  ARGV[10] TTL ms  ARGV[11] max amount
-- ARGV[12] quoteId (the member in KEYS[3])  (the index tags stay: quote_index '= = =')
-- ARGV[13] the event envelope (events.Envelope)
-- Reply: {'OK', HGETALL summary} | {'NOT_FOUND'} | {'ITEM_NOT_FOUND'} | {'STALE', current}
--        | {'INVALID_STATUS', status} | {'BOUND', 'items'|'itemBytes'} | {'OVERFLOW', field}
--        | {'DISCOUNT'} | {'CORRUPT', field}
--#include draft
local s, refused = draft_load('discountMinor', 'taxMinor')
if refused then return refused end
local discount, tax = tonumber(s[4]), tonumber(s[5])
if not discount then return {'CORRUPT', 'discountMinor'} end
if not tax then return {'CORRUPT', 'taxMinor'} end
local put = ARGV[3] == 'put'
local id = ARGV[4]
local max = tonumber(ARGV[11])
local exists = redis.call('HEXISTS', KEYS[2], id) == 1
if put then
  if string.len(ARGV[5]) > tonumber(ARGV[9]) then return {'BOUND', 'itemBytes'} end
  if not exists and redis.call('HLEN', KEYS[2]) >= tonumber(ARGV[8]) then return {'BOUND', 'items'} end
elseif not exists then
  return {'ITEM_NOT_FOUND'}
end
local subtotal, count = 0, 0
local all = redis.call('HGETALL', KEYS[2])
for i = 1, #all, 2 do
  if all[i] ~= id then
    local ok, it = pcall(cjson.decode, all[i + 1])
    if not ok or type(it) ~= 'table' then return {'CORRUPT', 'items'} end
    local q, p = tonumber(it['quantity']), tonumber(it['unitPriceMinor'])
    if not q or not p or q < 1 or p < 0 then return {'CORRUPT', 'items'} end
    local line = q * p
    if line > max then return {'OVERFLOW', 'lineTotalMinor'} end
    subtotal = subtotal + line
    if subtotal > max then return {'OVERFLOW', 'subtotalMinor'} end
    count = count + 1
  end
end
if put then
  local line = tonumber(ARGV[6]) * tonumber(ARGV[7])
  if line > max then return {'OVERFLOW', 'lineTotalMinor'} end
  subtotal = subtotal + line
  if subtotal > max then return {'OVERFLOW', 'subtotalMinor'} end
  count = count + 1
end
local total
total, refused = draft_total(subtotal, discount, tax, max)
if refused then return refused end
if put then
  redis.call('HSET', KEYS[2], id, ARGV[5])
else
  redis.call('HDEL', KEYS[2], id)
end
local function n(x) return string.format('%.0f', x) end
return draft_save(draft_now(), tonumber(ARGV[10]), ARGV[12], '= = =', {'quote.updated', ARGV[13], put and 'item_put' or 'item_delete'}, 'subtotalMinor', n(subtotal), 'totalMinor', n(total), 'itemCount', n(count))
