-- event_outbox: a user's session events kept in the user's session hash until the relay copies
-- them into the tenant's stream (the per-user layout; docs/EVENTS.md "Sessions", docs/KEYS.md
-- "Events"), so that a session write touches that one key. The fields (no ':' in their names,
-- so never a session's "<idPart>:<name>", and none of the user's own):
--   evSeq   the number of the last event appended (kept while the hash lives; with HSETEX,
--           for the max age past the last append, as the event)
--   ev.<n>  event n: type, timeMs, tenant, subject, actor, requestId, traceId and the data
--           (JSON) one a line, with the events' max age as its field TTL
-- Events are numbered one after the other (evSeq + 1); the first of a hash without evSeq takes
-- Redis's time in ms × 1000, so numbers only grow and the relay's checkpoint never moves back
-- (a hash is deleted only once evSeq is below now × 1000: event_outbox_keep). The pending
-- events are always the newest ones, ev.<h>..ev.<evSeq> for some h: the relay (which deletes
-- the events it copied with a plain HDEL), the bound below and the field TTLs all delete the
-- oldest first. The relay's id of event n is '<n div 1000>-<n mod 1000>': ordered as the
-- numbers, on the scale of the stream ids (<ms>-<seq>) of the per-session layout's outbox.
-- At most EVENT_OUTBOX_MAX events are pending in one hash: every EVENT_OUTBOX_TRIM-th append
-- deletes the oldest EVENT_OUTBOX_TRIM of the last EVENT_OUTBOX_MAX numbers (one HDEL now and
-- then rather than one each append), so a relay stopped for long loses the oldest first.
local EVENT_OUTBOX_MAX = 2000
local EVENT_OUTBOX_TRIM = 50
local EVENT_OUTBOX_SEQ = 'evSeq'
-- event_outbox_field(n) is event n's field name.
local function event_outbox_field(n)
  return 'ev.' .. string.format('%d', n)
end
-- event_outbox_seq is the hash's evSeq once this script has read or written it (every append
-- of the script goes to the one hash); false: read, absent.
local event_outbox_seq
-- event_outbox_raised: this script raised the hash's TTL already, or raises it itself after
-- its appends (event_outbox_defer_ttl) to at least event_outbox_need, the TTL in ms the events
-- it appended need (0: none appended).
local event_outbox_raised
local event_outbox_need = 0
local function event_outbox_last(key)
  if event_outbox_seq == nil then
    event_outbox_seq = tonumber(redis.call('HGET', key, EVENT_OUTBOX_SEQ)) or false
  end
  return event_outbox_seq
end
-- event_outbox_known(v) gives the outbox the hash's evSeq (a value the script read with its own
-- HMGET: nil when absent), saving the append its HGET.
local function event_outbox_known(v)
  event_outbox_seq = tonumber(v) or false
end
-- event_outbox_defer_ttl(): the script raises the hash's TTL itself after its appends, to at
-- least event_outbox_need, with the PTTL/PEXPIRE it makes anyway (one instead of two).
local function event_outbox_defer_ttl()
  event_outbox_raised = true
end
-- event_outbox_append(key, env, now, typ, subject, data) appends one event to the user's hash
-- key: data is a Lua table of small values, encoded as JSON; the event's field lives env.maxAge
-- ms, and the hash at least as long (its TTL raised once per script, never shortened).
-- Returns the event's number, or false when events are off (a max age of 0, as event_append).
local function event_outbox_append(key, env, now, typ, subject, data)
  if env.maxAge <= 0 then
    return false
  end
  local maxAge = string.format('%d', env.maxAge)
  local seq = event_outbox_last(key)
  local n = now * 1000
  if seq then
    n = seq + 1
    if n % EVENT_OUTBOX_TRIM == 0 then
      local old = {}
      for k = n - EVENT_OUTBOX_MAX + 1, n - EVENT_OUTBOX_MAX + EVENT_OUTBOX_TRIM do
        old[#old + 1] = event_outbox_field(k)
      end
      redis.call('HDEL', key, unpack(old))
    end
  end
  event_outbox_seq = n
  local f = event_outbox_field(n)
  local v = table.concat({typ, string.format('%d', now), env.tenant, subject, env.actor, env.req, env.trace, cjson.encode(data)}, '\n')
  if env.fx == 'hsetex' then
    -- (evSeq gets the event's TTL too: it outlives every event, and a hash without it numbers
    -- from now × 1000, past every earlier number)
    redis.call('HSETEX', key, 'PX', maxAge, 'FIELDS', 2, EVENT_OUTBOX_SEQ, string.format('%d', n), f, v)
  else
    redis.call('HSET', key, EVENT_OUTBOX_SEQ, string.format('%d', n), f, v)
    redis.call('HPEXPIRE', key, maxAge, 'FIELDS', 1, f)
  end
  event_outbox_need = env.maxAge
  if not event_outbox_raised then -- (after the HSET, which may have made the hash)
    if redis.call('PTTL', key) < env.maxAge then
      redis.call('PEXPIRE', key, maxAge)
    end
    event_outbox_raised = true
  end
  return n
end
-- event_outbox_keep(key) is whether key's hash must be kept when it holds no session: events
-- not yet copied wait in it (the last one is there: the relay deletes the oldest first), or
-- its last number is not below now × 1000 (a hash made anew must number past it).
local function event_outbox_keep(key)
  local seq = event_outbox_last(key)
  if not seq then
    return false
  end
  if redis.call('HEXISTS', key, event_outbox_field(seq)) == 1 then
    return true
  end
  local t = redis.call('TIME')
  return seq >= (tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)) * 1000
end
