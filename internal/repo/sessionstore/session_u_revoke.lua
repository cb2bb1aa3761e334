-- session_u_revoke.lua: the per-user layout's revocation of one session (docs/KEYS.md,
-- "Sessions"): delete every field of the session from the user's hash, its live MFA
-- challenge's included. Idempotent: a session already gone answers {'OK', 0}. When no live
-- session of the user is left, the hash itself (the user's fields) goes too, unless it holds
-- session events the relay has yet to copy (this revocation's among them): the relay deletes
-- it once it has (outbox_hash_ack.lua in internal/repo/eventstore).
-- KEYS[1]: the user's hash <prefix>:v1:sess:{<userTag>}, which also takes the event
--          session.revoked, or session.logged_out when the caller is the session itself
--          (session_event_hash)
-- ARGV[1]: tenant of the caller; another tenant's session is left untouched
-- ARGV[2]: idPart
-- ARGV[3]: the event envelope (session_event)
-- Reply: {'OK', 1} revoked | {'OK', 0} already gone | {'NOT_FOUND'} another tenant's session
--        (untouched)

--#include session_fields
--#include session_event_hash

local MARK = ':' .. LIVE
local tenant = redis.call('HGET', KEYS[1], 'tenantId')
if tenant and tenant ~= ARGV[1] then
  return {'NOT_FOUND'}
end
local part = ARGV[2]
local live = redis.call('HEXISTS', KEYS[1], part .. MARK)
local names = {}
for i, name in ipairs(SESSION_FIELDS) do
  names[i] = part .. ':' .. name
end
if redis.call('HDEL', KEYS[1], unpack(names)) == 0 then
  return {'OK', 0}
end
if live == 1 then
  session_ended()
end
for _, f in ipairs(redis.call('HKEYS', KEYS[1])) do
  if #f > #MARK and string.sub(f, -#MARK) == MARK then
    -- Another session is live: the user's fields stay, and record this write.
    local t = redis.call('TIME')
    redis.call('HSET', KEYS[1], 'updatedAtMs', string.format('%d', tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)))
    return {'OK', live}
  end
end
if event_outbox_keep(KEYS[1]) then
  local t = redis.call('TIME')
  redis.call('HSET', KEYS[1], 'updatedAtMs', string.format('%d', tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)))
  return {'OK', live}
end
redis.call('DEL', KEYS[1])
return {'OK', live}
