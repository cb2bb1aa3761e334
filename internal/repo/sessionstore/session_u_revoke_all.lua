-- session_u_revoke_all.lua: the per-user layout's revoke-all (docs/KEYS.md, "Sessions"):
-- every session of the user except the one kept, in one atomic step on the one key. The
-- user's sessions are fields of one hash, so no session created, rotated or verified
-- concurrently can be half seen: it is ordered wholly before this call (and revoked) or
-- wholly after it. Without a session to keep (none asked, or the one asked is not live) the
-- hash is deleted, unless it holds session events the relay has yet to copy (these
-- revocations' among them: the relay deletes it once it has); otherwise, or then, every
-- session field but the kept session's goes (the user's fields and the events have no ':').
-- KEYS[1]: the user's hash <prefix>:v1:sess:{<userTag>}, which also takes the events
--          (session_event_hash): session.revoked per live session deleted, reason revoke_all
--          (a service) or sign_out_elsewhere (the kept session)
-- ARGV[1]: idPart to keep, or '' for none
-- ARGV[2]: the event envelope (session_event; its tenant is read from the hash)
-- Reply: {'OK', live sessions deleted}
--#include session_event_hash

--#include session_fields
local MARK = ':' .. LIVE
local keep = ARGV[1]
-- session_u_revoked(parts) appends session.revoked for each live session part deleted.
local function session_u_revoked(parts)
  local reason = 'revoke_all'
  if session_actor_self(keep) then
    reason = 'sign_out_elsewhere'
  end
  SESSION_ENV.tenant = redis.call('HGET', KEYS[1], 'tenantId') or SESSION_ENV.tenant
  for _, p in ipairs(parts) do
    session_event('session.revoked', p, {reason = reason})
  end
end
local names = redis.call('HKEYS', KEYS[1])
local live, kept, parts = 0, false, {}
for _, f in ipairs(names) do
  if #f > #MARK and string.sub(f, -#MARK) == MARK then
    if string.sub(f, 1, #f - #MARK) == keep then
      kept = true
    else
      live = live + 1
      parts[#parts + 1] = string.sub(f, 1, #f - #MARK)
    end
  end
end
session_u_revoked(parts)
if not kept and not event_outbox_keep(KEYS[1]) then
  redis.call('DEL', KEYS[1])
  return {'OK', live}
end
local gone = {}
local own = keep .. ':'
for _, f in ipairs(names) do
  if string.find(f, ':', 1, true) and (not kept or string.sub(f, 1, #own) ~= own) then
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
