-- case_filter: how case_list.lua reads a candidate (--#include case_filter). The fields read per
-- case are ARGV[17..] (case_filter_fields); the filters ARGV[9..15] as case_list.lua's header
-- names them.

-- case_filter_fields() is the field names to HMGET, and each name's position in the values.
local function case_filter_fields()
  local fields, pos = {}, {}
  for i = 17, #ARGV do
    fields[#fields + 1] = ARGV[i]
    pos[ARGV[i]] = #fields
  end
  return fields, pos
end

-- case_filter(pos, now) is match(values): whether a case's values (HMGET of the fields, pos
-- their positions) are the tenant's and pass every filter at server time now (ms). Overdue:
-- due at or before now and not RESOLVED, as the sweeper judges due.
local function case_filter(pos, now)
  local statuses = {}
  for st in string.gmatch(ARGV[10], '%S+') do statuses[st] = true end
  local anyStatus = ARGV[10] == ''
  local function val(v, name) return v[pos[name]] end
  local function overdue(v)
    return val(v, 'status') ~= 'RESOLVED' and (tonumber(val(v, 'dueAtMs')) or 0) <= now
  end
  return function(v)
    if val(v, 'tenantId') ~= ARGV[9] then return false end
    if not anyStatus and not statuses[val(v, 'status')] then return false end
    if ARGV[11] ~= '' and (val(v, 'assignedTeam') or val(v, 'team')) ~= ARGV[11] then return false end
    if ARGV[12] ~= '' and val(v, 'assignee') ~= ARGV[12] then return false end
    if ARGV[13] ~= '' and val(v, 'escalationLevel') ~= ARGV[13] then return false end
    if ARGV[14] ~= '' and val(v, 'subjectRef') ~= ARGV[14] then return false end
    if ARGV[15] ~= '' and overdue(v) ~= (ARGV[15] == '1') then return false end
    return true
  end
end
