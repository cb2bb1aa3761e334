-- relay.lua: copy the outbox entries of several users of one tenant into the tenant's event
-- stream, exactly once, in order per user. The caller read the entries from the users' outboxes
-- (under each user's tag, other slots) and passes them here; each user's checkpoint, under the
-- tenant's tag, holds the last outbox id copied, so an entry at or before it (copied by an
-- earlier relay whose gateway died before deleting it from the outbox, or by a concurrent
-- relay) is skipped. Outbox ids only grow (a Stream's ids are ordered), so a checkpoint never
-- moves back. The checkpoints are the fields of one hash of the tenant, each with its own TTL
-- (servers with hash field expiration: one HMGET and one HSETEX, or HSET and HPEXPIRE, a call),
-- or one key per user (older servers).
-- KEYS[1]: the tenant's stream <prefix>:v1:events:{<tenantTag>}
-- KEYS[2]: the checkpoints hash <prefix>:v1:events:{<tenantTag>}:relayed (fields: user tags),
--          or KEYS[2..]: per user, its checkpoint <prefix>:v1:events:{<tenantTag>}:relayed:<userTag>
-- ARGV[1]: the envelope (events.Envelope: only the retention is read), ARGV[2]: the
--          checkpoints' TTL in ms
-- ARGV[3]: 'hash' (KEYS[2] is the checkpoints hash), 'hsetex' (the same, written with the
--          fields' TTL in one HSETEX: Redis 8) or 'keys'
-- ARGV[4..]: per user: its tag, m (its entry count), then per entry: outbox id, the event packed
--          (its fields one a line, events.OutboxValue), appended as the entry's one field 'event'
--          (events.FieldPacked): one value to copy rather than eight field, value pairs
-- Reply: {'OK', per user: how many of its entries were copied now (the last ones: those before
--        were skipped)}

--#include event_append

local function after(a, b)
  local am, as = string.match(a, '^(%d+)-(%d+)$')
  local bm, bs = string.match(b, '^(%d+)-(%d+)$')
  if not bm then
    return true
  end
  am, as, bm, bs = tonumber(am), tonumber(as), tonumber(bm), tonumber(bs)
  return am > bm or (am == bm and as > bs)
end

local env = event_env(ARGV[1])
local maxLen = string.format('%d', env.maxLen)
local inHash = ARGV[3] ~= 'keys'
-- the users' tags and where their entries start, then their checkpoints
local tags, starts = {}, {}
local i = 4
while i <= #ARGV do
  tags[#tags + 1] = ARGV[i]
  starts[#starts + 1] = i + 1
  i = i + 2 + 2 * tonumber(ARGV[i + 1])
end
local done
if inHash then
  done = redis.call('HMGET', KEYS[2], unpack(tags))
else
  done = {}
  for u = 1, #tags do
    done[u] = redis.call('GET', KEYS[1 + u])
  end
end
local out = {'OK'}
local moved, any = {}, false
for u = 1, #tags do
  local last, copied = done[u] or '', 0
  i = starts[u]
  local m = tonumber(ARGV[i])
  i = i + 1
  for _ = 1, m do
    local id = ARGV[i]
    if after(id, last) then
      redis.call('XADD', KEYS[1], 'MAXLEN', '~', maxLen, '*', 'event', ARGV[i + 1])
      copied = copied + 1
      last = id
    end
    i = i + 2
  end
  if copied > 0 then
    any = true
    if inHash then
      moved[#moved + 1] = tags[u]
      moved[#moved + 1] = last
    else
      redis.call('SET', KEYS[1 + u], last, 'PX', ARGV[2])
    end
  end
  out[#out + 1] = copied
end
if #moved > 0 then
  if ARGV[3] == 'hsetex' then
    redis.call('HSETEX', KEYS[2], 'PX', ARGV[2], 'FIELDS', #moved / 2, unpack(moved))
  else
    redis.call('HSET', KEYS[2], unpack(moved))
    local fields = {}
    for k = 1, #moved, 2 do
      fields[#fields + 1] = moved[k]
    end
    redis.call('HPEXPIRE', KEYS[2], ARGV[2], 'FIELDS', #fields, unpack(fields))
  end
  redis.call('PEXPIRE', KEYS[2], ARGV[2])
end
if any then
  local t = redis.call('TIME')
  local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  redis.call('XTRIM', KEYS[1], 'MINID', '~', string.format('%d', now - env.maxAge))
  redis.call('PEXPIRE', KEYS[1], string.format('%d', env.maxAge))
end
return out
