-- session_revoke_all.lua: revoke every session of one user (optionally keeping one) in one
-- single-slot atomic step. The members come from the device index inside the script, so a
-- session created a moment earlier is included, and a retry after a gateway crash simply
-- finds less to do: when this returns, no earlier session of the user exists.
-- KEYS[1]: device index <prefix>:v1:sessions:{<userTag>}
-- ARGV[1]: session key base   <prefix>:v1:session:{<userTag>}: (must carry KEYS[1]'s tag)
-- ARGV[2]: challenge key base <prefix>:v1:mfa:{<userTag>}:
-- ARGV[3]: idPart to keep, or '' for none
-- Reply: the number of live sessions deleted
local tag = string.match(KEYS[1], '{[^}]*}')
if not tag or not string.find(ARGV[1], tag, 1, true) or not string.find(ARGV[2], tag, 1, true) then
  return redis.error_reply('ERR session_revoke_all: keys must share one hash tag')
end
local n = 0
for _, m in ipairs(redis.call('ZRANGE', KEYS[1], 0, -1)) do
  if m ~= ARGV[3] then
    n = n + redis.call('DEL', ARGV[1] .. m)
    redis.call('DEL', ARGV[2] .. m)
    redis.call('ZREM', KEYS[1], m)
  end
end
return n
