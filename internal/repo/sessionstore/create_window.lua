-- create_window: what the two create scripts share (--#include create_window): the new
-- session's window and the reply.
--#include session_clock
--#include key_ttl
-- create_window() reads Redis's clock and ARGV[1..3] (the cap, the idle and the absolute timeout
-- in ms): now, nowS, max, abs (the new session's absolute deadline) and ttl, its first idle
-- window, min(idle, abs - now).
local function create_window()
  local now, nowS = session_now()
  local abs = now + tonumber(ARGV[3])
  return now, nowS, tonumber(ARGV[1]), abs, math.min(tonumber(ARGV[2]), abs - now)
end
-- create_done(key, now, ttl, abs, evicted, atLeast) raises the TTL of key, the one that lists the
-- user's sessions, to abs - now (a list lives as long as its longest-lived session can), or to
-- atLeast ms when longer (the events appended to it), and returns the reply {'OK', nowMs, ttlMs,
-- absoluteExpiresAtMs, <idPart of each evicted session>...}.
local function create_done(key, now, ttl, abs, evicted, atLeast)
  key_ttl_at_least(key, math.max(abs - now, atLeast or 0))
  local out = {'OK', now, ttl, abs}
  for _, part in ipairs(evicted) do
    out[#out + 1] = part
  end
  return out
end
