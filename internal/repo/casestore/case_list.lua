-- case_list.lua: one page of a tenant's cases from one of its list indexes (case_index), in
-- one round trip: prune expired cases from the indexes (bounded), read the index after the
-- cursor in chunks, read each candidate's listed fields (HMGET) and keep those matching every
-- filter, until the page is full, the scan budget is spent or the index's range ends.
-- Candidates whose hash is gone (expired, not yet pruned: its quota score has passed) leave
-- the indexes after every read. The case hashes are not declared keys: they share the tenant's
-- tag, so its slot; while that slot moves, a hash may not have reached this node yet (absent,
-- its quota score live): the script then answers TRYAGAIN before writing anything (503).
-- KEYS[1] quota set <p>:v1:quota:{<tenantTag>}:cases
-- KEYS[2] list coordinates <p>:v1:caseidx:{<tenantTag>}:where, KEYS[3..14] the list indexes
-- ARGV[1] which index (1..12, KEYS[2 + n])  ARGV[2] its value tag ('' for all cases)
-- ARGV[3] cursor: the last member examined ('' = first page)  ARGV[4] '1' newest first, '' forward
-- ARGV[5] limit  ARGV[6] scan budget (members examined at most)  ARGV[7] prune max
-- ARGV[8] case key prefix <p>:v1:case:{<tenantTag>}:  ARGV[9] tenantId
-- ARGV[10] statuses (space-separated, '' = any)  ARGV[11] assignedTeam  ARGV[12] assignee
-- ARGV[13] escalationLevel  ARGV[14] subjectRef ('' = any for each)
-- ARGV[15] overdue: '1' due and not RESOLVED, '0' the others, '' any
-- ARGV[16] '1' when the index orders by dueAt  ARGV[17..] the fields answered per case
-- Reply: {'OK', nowMs, last member examined ('' = none), more ('1' the range may hold more),
--         {field values}...} (each case's values in ARGV[17..] order, nil where absent),
--         or a TRYAGAIN error while the slot moves
--#include case_index
--#include case_filter
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local key, tag, cursor, rev = KEYS[2 + tonumber(ARGV[1])], ARGV[2], ARGV[3], ARGV[4] == '1'
local limit, budget = tonumber(ARGV[5]), tonumber(ARGV[6])
local fields, pos = case_filter_fields()
local match = case_filter(pos, now)
-- the queue of overdue cases ends at the first case due after now
local stopAfterDue = ARGV[16] == '1' and ARGV[15] == '1' and not rev
local found, gone, last, more, scanned = {}, {}, '', false, 0
while true do
  local want = math.min(math.max(limit - #found, 16), budget - scanned)
  local chunk = index_range(key, tag, cursor, '', want, rev)
  local done = false
  for i, m in ipairs(chunk) do
    if stopAfterDue and tonumber(string.match(m, '|(%d+)|')) > now then
      done, more = true, false
      break
    end
    last, scanned = m, scanned + 1
    local id = index_id(m)
    local v = redis.call('HMGET', ARGV[8] .. id, unpack(fields))
    if not v[pos.tenantId] then
      if index_live(KEYS[1], id, now) then
        return redis.error_reply('TRYAGAIN a listed case is not on this node yet (slot migration)')
      end
      gone[#gone + 1] = id
    elseif match(v) then
      found[#found + 1] = v
    end
    if #found == limit or scanned == budget then
      done, more = true, i < #chunk or #chunk == want
      break
    end
  end
  if done then break end
  if #chunk < want then break end
  cursor = last
end
for _, id in ipairs(gone) do index_drop(2, case_index_n, id) end
index_prune(KEYS[1], 2, case_index_n, now, tonumber(ARGV[7]))
local out = {'OK', now, last, more and '1' or '0'}
for _, v in ipairs(found) do out[#out + 1] = v end
return out
