-- event_append: an event written in the same script as its change (--#include event_append;
-- docs/EVENTS.md): the event exists iff the change happened. The gateway passes what every
-- event of the change shares as one argument, the envelope (events.Envelope): tenant, actor,
-- request id, trace id, the stream's max age in ms and its max length, one per line; for a
-- session's events also the user's tag, the session's idPart and the store's field-expiry mode
-- (hsetex: the outbox writes an event and its TTL in one HSETEX) and which of them are written
-- ('ends': only those that end a session; '': all).
-- event_env(s) parses the envelope.
local function event_env(s)
  -- (one match: cheaper than a loop over the lines)
  local v1, v2, v3, v4, v5, v6, v7, v8, v9, v10 = string.match(s,
    '^([^\n]*)\n([^\n]*)\n([^\n]*)\n([^\n]*)\n([^\n]*)\n([^\n]*)\n?([^\n]*)\n?([^\n]*)\n?([^\n]*)\n?([^\n]*)')
  return {tenant = v1 or '', actor = v2 or '', req = v3 or '', trace = v4 or '',
    maxAge = tonumber(v5) or 0, maxLen = tonumber(v6) or 0, tag = v7 or '', part = v8 or '', fx = v9 or '',
    only = v10 or ''}
end
-- event_append(key, env, now, type, subject, data) appends one event to the Stream key (a
-- tenant's stream or a user's outbox, under the tag of the script's other keys): data is a Lua
-- table of small values, encoded as JSON. The stream keeps none older than env.maxAge (MINID ~,
-- in the XADD) and about env.maxLen entries (MAXLEN ~, trimmed once it holds 1% more), and
-- lives env.maxAge past its last append (its TTL set here, in the same step). Returns the
-- entry id, or false when events are off (a max age of 0: GATEWAY_EVENTS=false).
local function event_append(key, env, now, typ, subject, data)
  if env.maxAge <= 0 then
    return false
  end
  local id = redis.call('XADD', key, 'MINID', '~', string.format('%d', now - env.maxAge), '*',
    'type', typ, 'timeMs', string.format('%d', now), 'tenant', env.tenant, 'subject', subject,
    'actor', env.actor, 'requestId', env.req, 'traceId', env.trace, 'data', cjson.encode(data))
  if redis.call('XLEN', key) > env.maxLen + math.floor(env.maxLen / 100) then
    redis.call('XTRIM', key, 'MAXLEN', '~', env.maxLen)
  end
  redis.call('PEXPIRE', key, string.format('%d', env.maxAge))
  return id
end
