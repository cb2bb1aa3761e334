-- quote_index: a draft's place in its tenant's list indexes (--#include quote_index), kept by
-- every script that writes a draft (object_index: the kit). The quote scripts' KEYS[4..8]:
-- KEYS[4] coordinates hash  <p>:v1:quoteidx:{<tenantTag>}:where
-- KEYS[5] all drafts        <p>:v1:quoteidx:{<tenantTag>}:all       member |<updatedAt>|<id>
-- KEYS[6] by customer       <p>:v1:quoteidx:{<tenantTag>}:customer  member <customerTag>|<updatedAt>|<id>
-- KEYS[7] by status         <p>:v1:quoteidx:{<tenantTag>}:status    member <statusTag>|<updatedAt>|<id>
-- KEYS[8] by sales channel  <p>:v1:quoteidx:{<tenantTag>}:channel   member <channelTag>|<updatedAt>|<id>
--#include object_index
local quote_index_first, quote_index_n = 4, 4

-- quote_index(now, exp, ttl, id, tags) puts draft id in the indexes at updatedAt now, until
-- exp (ttl ms from now). tags is the value tags of customer, status and channel (repo.IndexTag,
-- computed by the gateway), space-separated; '=' keeps the draft's current one (a patch that
-- leaves customerId alone: the gateway does not know it, the coordinates hash does).
local function quote_index(now, exp, ttl, id, tags)
  local want = {}
  for t in string.gmatch(tags, '%S+') do want[#want + 1] = t end
  local old = index_where(quote_index_first, id) or {}
  local members = {index_member('', now, id)}
  for i = 1, 3 do
    local tag = want[i]
    if tag == '=' or not tag then
      tag = old[i + 1] and old[i + 1] ~= '-' and string.match(old[i + 1], '^([^|]*)|')
    end
    members[i + 1] = tag and index_member(tag, now, id) or false
  end
  index_set(quote_index_first, quote_index_n, id, members, exp, ttl)
end

-- quote_index_drop(id) takes draft id out of every index.
local function quote_index_drop(id)
  index_drop(quote_index_first, quote_index_n, id)
end
