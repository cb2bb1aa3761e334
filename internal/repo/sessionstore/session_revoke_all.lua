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
-- ARGV[1]: idPart to keep, or '' for none
-- ARGV[2]: '1' when the challenge keys follow the session keys, else '0'
-- ARGV[3..n+2]: the idParts to revoke, in the order of KEYS[2..n+1]
-- Reply: {'OK', live sessions deleted}

--#include session_keys_check

local n = #ARGV - 2
local withChallenges = ARGV[2] == '1'
local refused = session_keys_check(1, n, withChallenges, 'ERR session_revoke_all: KEYS do not match the members')
if refused then
  return refused
end
local deleted = 0
for i = 1, n do
  deleted = deleted + redis.call('DEL', KEYS[i + 1])
  if withChallenges then
    redis.call('DEL', KEYS[n + i + 1])
  end
  redis.call('ZREM', KEYS[1], ARGV[i + 2])
end
return {'OK', deleted}
