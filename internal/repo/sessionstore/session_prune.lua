-- session_prune.lua: drop device-index members whose session is gone (idle expiry, or a hash
-- that vanished). The caller found the candidates missing with single-key reads, which follow
-- cluster redirections, so a session that is being moved to another node is never taken for
-- missing. This script checks again, on keys it declares, and removes a member only when its
-- hash does not exist; it also drops members past their absolute deadline (scores, Redis TIME).
-- Every key it touches is in KEYS: while the user's slot migrates Redis refuses the call
-- (TRYAGAIN/ASK) and the index is left as it is.
-- KEYS[1]: device index <prefix>:v1:sessions:{<userTag>}
-- KEYS[2..n+1]: the candidates' session hashes <prefix>:v1:sess:{<userTag>}:<idPart>
-- ARGV[1..n]: the candidates' idParts, in the order of KEYS[2..]
-- Reply: {'OK', number of members removed}
if #KEYS ~= #ARGV + 1 then
  return redis.error_reply('ERR session_prune: one session key per member')
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local n = redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', string.format('%d', now))
for i = 1, #ARGV do
  if redis.call('EXISTS', KEYS[i + 1]) == 0 then
    n = n + redis.call('ZREM', KEYS[1], ARGV[i])
  end
end
return {'OK', n}
