-- quote_submit.lua: move a draft from DRAFT to SUBMITTED at an expected stateVersion, bump
-- stateVersion and refresh the TTL of both keys and the draft's score in its tenant's quota set;
-- quote.submitted in the tenant's event stream.
-- KEYS[1] summary hash  <p>:v1:quote:{<tenantTag>}:<quoteId>
-- KEYS[2] items hash    KEYS[1] .. ':items'
-- KEYS[3] quota set     <p>:v1:quota:{<tenantTag>}:quotes  (member quoteId, score expiresAtMs)
-- KEYS[4..8] the list indexes (quote_index: where, all, customer, status, channel)
-- KEYS[9] the tenant's event stream <p>:v1:events:{<tenantTag>}
-- ARGV[1] tenantId  ARGV[2] expected stateVersion (If-Match; '' matches any)  ARGV[3] TTL ms
-- ARGV[4] quoteId (the member in KEYS[3])  ARGV[5] index tags ('= <SUBMITTED tag> =')
-- ARGV[6] the event envelope (events.Envelope)
-- Reply: {'OK', HGETALL summary} | {'NOT_FOUND'} | {'STALE', current} | {'INVALID_STATUS', status}
--        | {'CORRUPT', field}
--#include draft
local _, refused = draft_load()
if refused then return refused end
local now = draft_now()
return draft_save(now, tonumber(ARGV[3]), ARGV[4], ARGV[5], {'quote.submitted', ARGV[6], 'submit'}, 'status', 'SUBMITTED', 'submittedAtMs', string.format('%.0f', now))
