-- index_harness.lua: the object_index snippet driven from tests only (never preloaded).
-- KEYS[1] quota set  KEYS[2] coordinates hash  KEYS[3..] the indexes (n = #KEYS - 2)
-- ARGV[1] op:
--   'set'   id exp ttl member...   quota_hold + index_set (member '' = in none)
--   'drop'  id                      index_drop + ZREM from the quota set
--   'full'  now limit               index_quota_full: {wait or -1}
--   'prune' now max                 index_prune: {count}
--   'range' i tag cursor since count rev('1'|'')   index_range on KEYS[2+i]: {member...}
--   'id'    member                  {index_id(member)}
-- Reply: an array as listed per op.
--#include object_index
local n = #KEYS - 2
local op = ARGV[1]
if op == 'set' then
  local members = {}
  for i = 1, n do
    local m = ARGV[4 + i]
    if m and m ~= '' then members[i] = m else members[i] = false end
  end
  quota_hold(KEYS[1], ARGV[2], ARGV[3], tonumber(ARGV[4]))
  index_set(2, n, ARGV[2], members, ARGV[3], tonumber(ARGV[4]))
  return {}
elseif op == 'drop' then
  index_drop(2, n, ARGV[2])
  redis.call('ZREM', KEYS[1], ARGV[2])
  return {}
elseif op == 'full' then
  return {tostring(index_quota_full(KEYS[1], 2, n, tonumber(ARGV[2]), tonumber(ARGV[3])) or -1)}
elseif op == 'prune' then
  return {tostring(index_prune(KEYS[1], 2, n, tonumber(ARGV[2]), tonumber(ARGV[3])))}
elseif op == 'range' then
  return index_range(KEYS[2 + tonumber(ARGV[2])], ARGV[3], ARGV[4], ARGV[5], tonumber(ARGV[6]), ARGV[7] == '1')
elseif op == 'id' then
  return {index_id(ARGV[2])}
end
return redis.error_reply('unknown op')
