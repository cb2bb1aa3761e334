-- idle_refresh: what the two hot-path scripts share (--#include idle_refresh): the refresh
-- decision and the answer's fields.
-- idle_refresh_want(d, presented, implicitIdle, fraction, pttl, now) → abs, idle, want. d holds the
-- session's userId, tenantId, schemaVersion, absoluteExpiresAtMs, idleTimeoutMs and verifierMac
-- (nil when absent); abs is its absolute deadline and idle its idle timeout (its own, else
-- implicitIdle; nil when unreadable); want is the idle
-- window to slide to, min(idle, abs - now), or nil when no refresh is due: only a complete
-- session proven by the presented verifier MAC, before its deadline, with less than fraction of
-- its idle window (pttl) left, is extended (a corrupt one, or another token, is refused by the
-- caller and never extended).
local function idle_refresh_want(d, presented, implicitIdle, fraction, pttl, now)
  local abs = tonumber(d[4])
  local idle = tonumber(implicitIdle)
  if d[5] then
    idle = tonumber(d[5])
  end
  if d[1] and d[2] and d[3] and d[6] == presented and abs and idle and idle > 0 and abs > now
    and pttl < idle * tonumber(fraction) then
    local want = math.min(idle, abs - now)
    if want > pttl then
      return abs, idle, want
    end
  end
  return abs, idle, nil
end
-- idle_refresh_answer(out, first) appends to out the values of KEYS[1]'s fields named by
-- ARGV[first..] (nil when absent) and returns it.
local function idle_refresh_answer(out, first)
  local v = redis.call('HMGET', KEYS[1], unpack(ARGV, first))
  for i = 1, #v do
    out[#out + 1] = v[i]
  end
  return out
end
