-- session_u_revoke_all.lua: the per-user layout's revoke-all (docs/KEYS.md, "Sessions"):
-- every session of the user except the one kept, in one atomic step on the one key. The
-- user's sessions are fields of one hash, so no session created, rotated or verified
-- concurrently can be half seen: it is ordered wholly before this call (and revoked) or
-- wholly after it. Without a session to keep (none asked, or the one asked is not live) the
-- hash is deleted; otherwise every field that is not the user's or the kept session's goes.
-- KEYS[1]: the user's hash <prefix>:v1:sess:{<userTag>}
--          (the only key: a single-key script is served while the user's slot migrates)
-- ARGV[1]: idPart to keep, or '' for none
-- Reply: {'OK', live sessions deleted}

--#include session_fields
local MARK = ':' .. LIVE
local keep = ARGV[1]
local names = redis.call('HKEYS', KEYS[1])
local live, kept = 0, false
for _, f in ipairs(names) do
  if #f > #MARK and string.sub(f, -#MARK) == MARK then
    if string.sub(f, 1, #f - #MARK) == keep then
      kept = true
    else
      live = live + 1
    end
  end
end
if not kept then
  redis.call('DEL', KEYS[1])
  return {'OK', live}
end
local gone = {}
local own = keep .. ':'
for _, f in ipairs(names) do
  if string.find(f, ':', 1, true) and string.sub(f, 1, #own) ~= own then
    gone[#gone + 1] = f
  end
end
if #gone == 0 then
  return {'OK', 0}
end
-- HDEL takes at most as many fields as unpack can pass: delete in batches.
for from = 1, #gone, 1000 do
  redis.call('HDEL', KEYS[1], unpack(gone, from, math.min(from + 999, #gone)))
end
local t = redis.call('TIME')
redis.call('HSET', KEYS[1], 'updatedAtMs', string.format('%d', tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)))
return {'OK', live}
