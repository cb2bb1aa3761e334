-- event_outbox: a user's session events kept in the user's session hash until the relay copies
-- them into the tenant's stream (the per-user layout; docs/EVENTS.md "Sessions", docs/KEYS.md
-- "Events"), so that a session write touches that one key. The fields (no ':' in their names,
-- so never a session's "<idPart>:<name>", and none of the user's own):
--   evSeq   the number of the last event appended
--   evHead  the number of the oldest event not yet copied (evSeq + 1: none pending)
--   ev.<n>  event n: type, timeMs, tenant, subject, actor, requestId, traceId and the data
--           (JSON) one a line, with the events' max age as its field TTL
-- Numbers only grow, so the relay's checkpoint never moves back: pending events are numbered
-- one after the other, and an event appended to an empty outbox takes max(evSeq + 1, Redis
-- time in ms × 1000); the relay deletes a hash only once evSeq is below now × 1000. The relay's
-- id of event n is '<n div 1000>-<n mod 1000>': ordered as the numbers, on the scale of the
-- stream ids (<ms>-<seq>) of the per-session layout's outbox.
-- At most EVENT_OUTBOX_MAX events are pending in one hash: an append beyond drops the oldest.
local EVENT_OUTBOX_MAX = 2000
local EVENT_OUTBOX_SEQ, EVENT_OUTBOX_HEAD = 'evSeq', 'evHead'
-- event_outbox_field(n) is event n's field name.
local function event_outbox_field(n)
  return 'ev.' .. string.format('%d', n)
end
-- event_outbox_state is the hash's evSeq and evHead once this script has read them (every
-- append of the script goes to the one hash).
local event_outbox_state
-- event_outbox_append(key, env, now, typ, subject, data) appends one event to the user's hash
-- key: data is a Lua table of small values, encoded as JSON; the event's field lives env.maxAge
-- ms, and the hash at least as long (its TTL raised, never shortened). Returns the event's
-- number, or false when events are off (a max age of 0, as event_append).
local function event_outbox_append(key, env, now, typ, subject, data)
  if env.maxAge <= 0 then
    return false
  end
  local st = event_outbox_state
  if not st then
    local v = redis.call('HMGET', key, EVENT_OUTBOX_SEQ, EVENT_OUTBOX_HEAD)
    st = {seq = tonumber(v[1]), head = tonumber(v[2])}
    event_outbox_state = st
    if redis.call('PTTL', key) < env.maxAge then
      redis.call('PEXPIRE', key, string.format('%d', env.maxAge))
    end
  end
  local set = {}
  local n
  if st.seq and st.head and st.head <= st.seq then
    n = st.seq + 1
    if n - st.head >= EVENT_OUTBOX_MAX then
      redis.call('HDEL', key, event_outbox_field(st.head))
      st.head = st.head + 1
      set[#set + 1] = EVENT_OUTBOX_HEAD
      set[#set + 1] = string.format('%d', st.head)
    end
  else
    n = math.max(now * 1000, (st.seq or 0) + 1)
    st.head = n
    set[#set + 1] = EVENT_OUTBOX_HEAD
    set[#set + 1] = string.format('%d', n)
  end
  st.seq = n
  local f = event_outbox_field(n)
  redis.call('HSET', key, EVENT_OUTBOX_SEQ, string.format('%d', n), f,
    table.concat({typ, string.format('%d', now), env.tenant, subject, env.actor, env.req, env.trace, cjson.encode(data)}, '\n'),
    unpack(set))
  redis.call('HPEXPIRE', key, string.format('%d', env.maxAge), 'FIELDS', 1, f)
  return n
end
-- event_outbox_pending(key) is whether key's hash holds events not yet copied.
local function event_outbox_pending(key)
  local st = event_outbox_state
  if not st then
    local v = redis.call('HMGET', key, EVENT_OUTBOX_SEQ, EVENT_OUTBOX_HEAD)
    st = {seq = tonumber(v[1]), head = tonumber(v[2])}
  end
  return st.seq ~= nil and st.head ~= nil and st.head <= st.seq
end
