-- session_u_list.lua: the per-user layout's device list (docs/KEYS.md, "Sessions"). Read the
-- user's hash and the remaining idle window of every live session in one step, writing
-- nothing. A session is live while its <idPart>:live field exists (its field
-- TTL is the end of the idle window): fields whose TTL passed are never returned, so an
-- idle-expired session is simply absent and nothing needs pruning. The fields no view reads
-- (the MFA code's MAC, the device hashes, the user's pending session events) are left out of
-- the reply: of the fields without ':', only the user's own (SESSION_USER_FIELDS).
-- KEYS[1]: the user's hash <prefix>:v1:sess:{<userTag>}
--          (the only key: a single-key script is served while the user's slot migrates)
-- Reply: {'OK', {field, value, ...}, {idPart, pttlMs, ...}, {idPart, expireAtMs, ...}}
--        (HPTTL and HPEXPIRETIME of each live session's live field, as strings;
--        -1 when it has no field TTL; the last use derives from the expiry)
--#include session_fields
local MARK = ':' .. LIVE
local HIDDEN = {mfaCodeMac = true, ipHash = true, userAgentHash = true}
local USER = {}
for _, name in ipairs(SESSION_USER_FIELDS) do
  USER[name] = true
end
local all = redis.call('HGETALL', KEYS[1])
local fields, marks, parts = {}, {}, {}
for i = 1, #all, 2 do
  local f = all[i]
  local colon = string.find(f, ':', 1, true)
  if (colon and not HIDDEN[string.sub(f, colon + 1)]) or (not colon and USER[f]) then
    fields[#fields + 1] = f
    fields[#fields + 1] = all[i + 1]
  end
  if colon and string.sub(f, colon) == MARK then
    marks[#marks + 1] = f
    parts[#parts + 1] = string.sub(f, 1, colon - 1)
  end
end
local ttls, exps = {}, {}
-- HPTTL takes at most as many fields as unpack can pass: ask in batches.
for from = 1, #marks, 1000 do
  local to = math.min(from + 999, #marks)
  local got = redis.call('HPTTL', KEYS[1], 'FIELDS', to - from + 1, unpack(marks, from, to))
  local at = redis.call('HPEXPIRETIME', KEYS[1], 'FIELDS', to - from + 1, unpack(marks, from, to))
  for k = from, to do
    ttls[#ttls + 1] = parts[k]
    ttls[#ttls + 1] = string.format('%d', got[k - from + 1])
    exps[#exps + 1] = parts[k]
    exps[#exps + 1] = string.format('%d', at[k - from + 1])
  end
end
return {'OK', fields, ttls, exps}
