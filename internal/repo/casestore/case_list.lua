-- case_list.lua: one page of a tenant's cases from one of its list indexes (case_index), in
-- one round trip: prune expired cases from the indexes (bounded), read the index after the
-- cursor in chunks, read each candidate's listed fields (HMGET) and keep those matching every
-- filter, until the page is full, the scan budget is spent or the index's range ends.
-- Candidates whose hash is gone (expired, not yet pruned) leave the indexes after every read.
-- The case hashes are not declared keys: they share the tenant's tag, so its slot; a slot
-- being migrated makes the read fail before anything is written (the gateway answers 503).
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
--         {field values}...} (each case's values in ARGV[17..] order, nil where absent)
--#include case_index
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local key, tag, cursor, rev = KEYS[2 + tonumber(ARGV[1])], ARGV[2], ARGV[3], ARGV[4] == '1'
local limit, budget = tonumber(ARGV[5]), tonumber(ARGV[6])
local fields, pos = {}, {}
for i = 17, #ARGV do
  fields[#fields + 1] = ARGV[i]
  pos[ARGV[i]] = #fields
end
local statuses = {}
for st in string.gmatch(ARGV[10], '%S+') do statuses[st] = true end
local anyStatus = ARGV[10] == ''
local function val(v, name) return v[pos[name]] end
local function overdue(v)
  return val(v, 'status') ~= 'RESOLVED' and (tonumber(val(v, 'dueAtMs')) or 0) <= now
end
local function match(v)
  if val(v, 'tenantId') ~= ARGV[9] then return false end
  if not anyStatus and not statuses[val(v, 'status')] then return false end
  if ARGV[11] ~= '' and (val(v, 'assignedTeam') or val(v, 'team')) ~= ARGV[11] then return false end
  if ARGV[12] ~= '' and val(v, 'assignee') ~= ARGV[12] then return false end
  if ARGV[13] ~= '' and val(v, 'escalationLevel') ~= ARGV[13] then return false end
  if ARGV[14] ~= '' and val(v, 'subjectRef') ~= ARGV[14] then return false end
  if ARGV[15] ~= '' and overdue(v) ~= (ARGV[15] == '1') then return false end
  return true
end
-- the queue of overdue cases ends at the first case due after now
local stopAfterDue = ARGV[16] == '1' and ARGV[15] == '1' and not rev
local out, gone, last, more, scanned = {}, {}, '', false, 0
while true do
  local want = math.min(math.max(limit - #out, 16), budget - scanned)
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
    if not val(v, 'tenantId') then
      gone[#gone + 1] = id
    elseif match(v) then
      out[#out + 1] = v
    end
    if #out == limit or scanned == budget then
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
local reply = {'OK', now, last, more and '1' or '0'}
for _, v in ipairs(out) do reply[#reply + 1] = v end
return reply
