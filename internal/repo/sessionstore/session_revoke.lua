-- session_revoke.lua: delete one session, its MFA challenge key and its device-index entry.
-- Idempotent: a session already gone answers {'OK', 0} and its leftovers are cleaned.
-- KEYS[1]: session hash    <prefix>:v1:sess:{<userTag>}:<idPart>
-- KEYS[2]: device index    <prefix>:v1:sessions:{<userTag>}
-- KEYS[3]: challenge key   <prefix>:v1:mfa:{<userTag>}:<idPart> (fallback mode only)
-- KEYS[4]: the user's event outbox (session_event): session.revoked, or session.logged_out
--          when the caller is the session itself
-- ARGV[1]: tenant of the caller; another tenant's session is left untouched
-- ARGV[2]: idPart (the index member)
-- ARGV[3]: the event envelope (session_event)
-- Reply: {'OK', 1} revoked | {'OK', 0} already gone | {'NOT_FOUND'} another tenant's session
--        (untouched)
--#include session_event_stream

local tenant = redis.call('HGET', KEYS[1], 'tenantId')
if tenant and tenant ~= ARGV[1] then
  return {'NOT_FOUND'}
end
local n = redis.call('DEL', KEYS[1])
redis.call('DEL', KEYS[3])
redis.call('ZREM', KEYS[2], ARGV[2])
if n == 1 then
  session_ended()
end
return {'OK', n}
