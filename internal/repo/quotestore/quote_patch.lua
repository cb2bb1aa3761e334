-- quote_patch.lua: merge-patch a DRAFT at an expected stateVersion (compare-and-set), keep
-- totalMinor = subtotalMinor - discountMinor + taxMinor, bump stateVersion, refresh the TTL of
-- both keys and the draft's score in its tenant's quota set; quote.updated in the tenant's event
-- stream.
-- KEYS[1] summary hash  <p>:v1:quote:{<tenantTag>}:<quoteId>
-- KEYS[2] items hash    KEYS[1] .. ':items'
-- KEYS[3] quota set     <p>:v1:quota:{<tenantTag>}:quotes  (member quoteId, score expiresAtMs)
-- KEYS[4..8] the list indexes (quote_index: where, all, customer, status, channel)
-- KEYS[9] the tenant's event stream <p>:v1:events:{<tenantTag>}
-- ARGV[1] tenantId  ARGV[2] expected stateVersion (If-Match; '' matches any)  ARGV[3] TTL ms
-- ARGV[4] max amount (2^53-1: Lua numbers are doubles, exact below it)
-- ARGV[5] customerId  ARGV[6] salesChannel  ARGV[7] discountMinor  ARGV[8] taxMinor ('' = unchanged)
-- ARGV[9] quoteId (the member in KEYS[3])  ARGV[10] index tags (quote_index: '= = =' unless the
-- customer or channel changes)  ARGV[11] the event envelope (events.Envelope)
-- Reply: {'OK', HGETALL summary} | {'NOT_FOUND'} | {'STALE', current} | {'INVALID_STATUS', status}
--        | {'DISCOUNT'} | {'OVERFLOW', field} | {'CORRUPT', field}
--#include draft
local s, refused = draft_load('subtotalMinor', 'discountMinor', 'taxMinor')
if refused then return refused end
local subtotal = tonumber(s[4])
if not subtotal then return {'CORRUPT', 'subtotalMinor'} end
local discount = tonumber(s[5])
if ARGV[7] ~= '' then discount = tonumber(ARGV[7]) end
local tax = tonumber(s[6])
if ARGV[8] ~= '' then tax = tonumber(ARGV[8]) end
if not discount then return {'CORRUPT', 'discountMinor'} end
if not tax then return {'CORRUPT', 'taxMinor'} end
local total
total, refused = draft_total(subtotal, discount, tax, tonumber(ARGV[4]))
if refused then return refused end
if ARGV[5] ~= '' then redis.call('HSET', KEYS[1], 'customerId', ARGV[5]) end
if ARGV[6] ~= '' then redis.call('HSET', KEYS[1], 'salesChannel', ARGV[6]) end
local function n(x) return string.format('%.0f', x) end
return draft_save(draft_now(), tonumber(ARGV[3]), ARGV[9], ARGV[10], {'quote.updated', ARGV[11], 'patch'}, 'discountMinor', n(discount), 'taxMinor', n(tax), 'totalMinor', n(total))
