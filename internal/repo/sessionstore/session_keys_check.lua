-- session_keys_check: session_keys_check(fixed, n, withChallenges, message) is nil when KEYS
-- holds the script's fixed keys, then n session keys, then (withChallenges: the fallback mode)
-- their n challenge keys, then the user's event outbox when session events are on (the last
-- argument, the envelope, is not empty); else the Redis error message
-- (--#include session_keys_check).
local function session_keys_check(fixed, n, withChallenges, message)
  local want = fixed + n
  if withChallenges then
    want = fixed + 2 * n
  end
  if ARGV[#ARGV] ~= '' then
    want = want + 1
  end
  if n < 0 or #KEYS ~= want then
    return redis.error_reply(message)
  end
  return nil
end
