-- mfa_code: what the two MFA verify scripts share (--#include mfa_code): the attempt counter,
-- the live challenge's check and the code's comparison.
--#include fixed_window
--#include session_clock
-- mfa_attempt(found, cid, mac, createdAt, want, counter, limit, windowMs, bufferMs) checks an
-- attempt at the code of the challenge named want, before the code is compared: found is
-- whether the session exists for the caller's tenant (uncounted when not), cid and mac its live
-- challenge's id and code MAC, createdAt its mfaChallengeCreatedAtMs. The attempt is counted
-- in the user's fixed-window counter. Returns {now, nowS, count, reset, refused}, refused being
-- nil or the reply: {'NOT_FOUND'} | {'LIMITED', count, resetMs} (the attempt uncounted) |
-- {'NO_CHALLENGE', count, resetMs, hadChallenge (0|1: whether createdAt is set)}.
local function mfa_attempt(found, cid, mac, createdAt, want, counter, limit, window, buffer)
  if not found then
    return {refused = {'NOT_FOUND'}}
  end
  local a = {}
  a.now, a.nowS = session_now()
  local allowed
  allowed, a.count, a.reset = fixed_window(counter, a.now, tonumber(window), tonumber(buffer), tonumber(limit))
  if allowed == 0 then
    a.refused = {'LIMITED', a.count, a.reset}
  elseif not cid or not mac or cid ~= want then
    local had = 0
    if createdAt then
      had = 1
    end
    a.refused = {'NO_CHALLENGE', a.count, a.reset, had}
  end
  return a
end
-- mfa_same(a, b) compares two MACs, visiting every byte whatever the mismatch: neither the code
-- nor the MAC leaks through timing (both are keyed MACs, not secrets).
local function mfa_same(a, b)
  if #a ~= #b then
    return false
  end
  local diff = 0
  for i = 1, #a do
    if string.byte(a, i) ~= string.byte(b, i) then
      diff = diff + 1
    end
  end
  return diff == 0
end
-- mfa_failed_events(emit, failed, count, limit, reset) appends session.mfa_failed for a wrong
-- code and, when it used the window's last attempt, session.mfa_locked (once per window:
-- refused attempts write nothing). emit is session_event.
local function mfa_failed_events(emit, failed, count, limit, reset)
  emit('session.mfa_failed', nil, {failedAttempts = failed})
  if tonumber(count) >= tonumber(limit) then
    emit('session.mfa_locked', nil, {retryAfterMs = reset})
  end
end
