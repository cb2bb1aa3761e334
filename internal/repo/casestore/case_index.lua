-- case_index: a case's members in its tenant's list indexes (casestore/index.go names them),
-- kept by every script that writes a case (--#include case_index). The indexes are
-- KEYS[first+1..first+12] after the coordinates hash KEYS[first] (object_index), in this
-- order: for each filter (all, status, team, assignee, level, subject) the index by updatedAt,
-- then the one by dueAt. A case without an assignee is in neither assignee index.
--#include object_index
local case_index_n = 12

-- case_index_set(first, id, tags, updatedMs, dueMs, exp, ttl) puts case id in its indexes:
-- tags = {status, team, assignee (false: none), level, subject} value tags (repo.IndexTag).
local function case_index_set(first, id, t, upd, due, exp, ttl)
  local m = {}
  for i, tag in ipairs({'', t.status, t.team, t.assignee, t.level, t.subject}) do
    m[2 * i - 1] = tag and index_member(tag, upd, id) or false
    m[2 * i] = tag and index_member(tag, due, id) or false
  end
  index_set(first, case_index_n, id, m, exp, ttl)
end

-- case_index_tags(first, id) is the team, assignee and subject tags of case id's current
-- members (what a transition that does not change them keeps); false where it is in none.
local function case_index_tags(first, id)
  local old = index_where(first, id) or {}
  local function tag(i)
    local m = old[i]
    if not m or m == '-' then return false end
    return string.match(m, '^([^|]*)|')
  end
  return {team = tag(5), assignee = tag(7), subject = tag(11)}
end

-- case_index_lookup(statusTags, levelTags, status, level) is the status and level value tags
-- of a case from the tables Go passes (ARGV: 'OPEN ESCALATED RESOLVED' tags, and the tags of
-- levels 0..max, each space-separated).
local function case_index_lookup(statusTags, levelTags, status, level)
  local st, lv = {}, {}
  for tag in string.gmatch(statusTags, '%S+') do st[#st + 1] = tag end
  for tag in string.gmatch(levelTags, '%S+') do lv[#lv + 1] = tag end
  local byStatus = {OPEN = st[1], ESCALATED = st[2], RESOLVED = st[3]}
  return byStatus[status] or false, lv[tonumber(level) + 1] or false
end
