-- session_revoke_all.lua: revoke every session of one user (optionally keeping one) in one
-- atomic step. The caller reads the device index first and passes every member's keys in KEYS,
-- so the script touches only declared keys: while the user's slot migrates Redis refuses the
-- whole call (TRYAGAIN/ASK, answered 503) instead of running it on a partial view.
-- An index member that was not passed joined the index after the caller's read: a session
-- created since then is concurrent with this revoke-all and may stay (it is ordered after it).
-- Rotation and MFA step-up keep a session's member (its id), so every session that existed
-- when the caller read the index is passed and deleted here; a retry after a gateway crash finds
-- less to do.
-- KEYS[1]: device index <prefix>:v1:sessions:{<userTag>}
-- KEYS[2..n+1]: the session hashes <prefix>:v1:sess:{<userTag>}:<idPart> to delete
-- KEYS[n+2..2n+1]: their challenge keys <prefix>:v1:mfa:{<userTag>}:<idPart>, only when ARGV[2]
--          is '1' (fallback mode)
-- KEYS[last]: the user's event outbox (session_event): session.revoked per live session
--          deleted, reason revoke_all (a service) or sign_out_elsewhere (the kept session)
-- ARGV[1]: idPart to keep, or '' for none
-- ARGV[2]: '1' when the challenge keys follow the session keys, else '0'
-- ARGV[3..n+2]: the idParts to revoke, in the order of KEYS[2..n+1]
-- ARGV[n+3]: the event envelope (session_event; its tenant is read from the sessions)
-- Reply: {'OK', live sessions deleted}

--#include session_keys_check
--#include session_event_stream

local n = #ARGV - 3
local withChallenges = ARGV[2] == '1'
local refused = session_keys_check(1, n, withChallenges, 'ERR session_revoke_all: KEYS do not match the members')
if refused then
  return refused
end
local deleted = 0
local reason = 'revoke_all'
if session_actor_self(ARGV[1]) then
  reason = 'sign_out_elsewhere'
end
for i = 1, n do
  local tenant = redis.call('HGET', KEYS[i + 1], 'tenantId')
  if tenant then
    SESSION_ENV.tenant = tenant
    session_event('session.revoked', ARGV[i + 2], {reason = reason})
  end
  deleted = deleted + redis.call('DEL', KEYS[i + 1])
  if withChallenges then
    redis.call('DEL', KEYS[n + i + 1])
  end
  redis.call('ZREM', KEYS[1], ARGV[i + 2])
end
return {'OK', deleted}
