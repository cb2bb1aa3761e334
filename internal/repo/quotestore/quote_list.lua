-- quote_list.lua: one page of a tenant's drafts, newest first by last update, read from the
-- list index the gateway picked for the filters (the most selective one), in one round trip.
-- Reads first, writes last: the candidates' summary hashes are not declared keys (same tag,
-- same slot). While their slot migrates, a hash already moved away raises an error on the
-- source, and one not yet moved reads as absent on the target: a candidate whose hash is
-- absent but whose quota score is still live is therefore answered with a TRYAGAIN error,
-- before anything is written (the gateway answers 503 with Retry-After). Then the bounded
-- prune: expired drafts leave the indexes with their quota member, and a candidate whose hash
-- is gone and whose quota score has passed (expired, not yet pruned) leaves them too, so
-- nothing is listed that GET calls 404.
-- KEYS[1] quota set  <p>:v1:quota:{<tenantTag>}:quotes
-- KEYS[2..6] the list indexes: where, all, customer, status, channel (quote_index)
-- ARGV[1] tenantId  ARGV[2] summary key prefix <p>:v1:quote:{<tenantTag>}:
-- ARGV[3] the index read: 1 all | 2 customer | 3 status | 4 channel  ARGV[4] its value tag
-- ARGV[5] cursor member ('' = the first page)  ARGV[6] updatedSince ms ('' = any)
-- ARGV[7] page size  ARGV[8] scan budget (members examined at most)  ARGV[9] prune max
-- ARGV[10] customerId ('' = any)  ARGV[11] salesChannel ('' = any)
-- ARGV[12] statuses, space-separated ('' = any)
-- Reply: {'OK', next, summary...} (or a TRYAGAIN error while the slot moves): next the last member examined when the index may hold more
-- ('' on the last page), then up to ARGV[7] summaries (HGETALL) newest first. A page may be
-- short, even empty, and still have a next (the scan budget was spent on drafts that do not
-- match).
--#include object_index
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local limit, budget = tonumber(ARGV[7]), tonumber(ARGV[8])
local statuses = nil
if ARGV[12] ~= '' then
  statuses = {}
  for s in string.gmatch(ARGV[12], '%S+') do statuses[s] = true end
end
local since = tonumber(ARGV[6])
local cands = index_range(KEYS[2 + tonumber(ARGV[3])], ARGV[4], ARGV[5], ARGV[6], budget, true)
local out = {'OK', ''}
local gone, last = {}, ''
for i, member in ipairs(cands) do
  local id = index_id(member)
  local h = redis.call('HGETALL', ARGV[2] .. id)
  last = member
  if #h == 0 then
    if index_live(KEYS[1], id, now) then
      -- Live by the quota set, yet its hash is not here: the slot is moving and this node
      -- holds the indexes but not that hash yet. Nothing written; the gateway answers 503.
      return redis.error_reply('TRYAGAIN a listed draft is not on this node yet (slot migration)')
    end
    gone[#gone + 1] = id
  else
    local f = {}
    for j = 1, #h, 2 do f[h[j]] = h[j + 1] end
    if f['tenantId'] == ARGV[1]
      and (ARGV[10] == '' or f['customerId'] == ARGV[10])
      and (ARGV[11] == '' or f['salesChannel'] == ARGV[11])
      and (not statuses or statuses[f['status'] or ''])
      and (not since or (tonumber(f['updatedAtMs']) or 0) >= since) then
      out[#out + 1] = h
      if #out - 2 == limit then
        if i == #cands and #cands < budget then last = '' end
        break
      end
    end
  end
  if i == #cands and #cands < budget then last = '' end
end
out[2] = last
for _, id in ipairs(gone) do
  index_drop(2, 4, id)
  redis.call('ZREM', KEYS[1], id)
end
index_prune(KEYS[1], 2, 4, now, tonumber(ARGV[9]))
return out
