-- relay.lua: copy a user's outbox entries into the tenant's event stream, exactly once, in
-- order. The caller read the entries from the outbox (under the user's tag, another slot) and
-- passes them here; the checkpoint, under the tenant's tag, holds the last outbox id copied,
-- so an entry at or before it (copied by an earlier relay whose gateway died before deleting it
-- from the outbox, or by a concurrent relay) is skipped. Outbox ids only grow (a Stream's ids
-- are ordered), so the checkpoint never moves back.
-- KEYS[1]: the tenant's stream <prefix>:v1:events:{<tenantTag>}
-- KEYS[2]: the checkpoint <prefix>:v1:events:{<tenantTag>}:relayed:<userTag>
-- ARGV[1]: the envelope (events.Envelope: only the retention is read), ARGV[2]: the
--          checkpoint's TTL in ms
-- ARGV[3..]: per entry: outbox id, n (the count of field, value strings), then the n strings
-- Reply: {'OK', last outbox id copied or skipped, outbox id copied...}

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
local done = redis.call('GET', KEYS[2]) or ''
local copied, last, i = {}, done, 3
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
while i <= #ARGV do
  local id, n = ARGV[i], tonumber(ARGV[i + 1])
  if after(id, last) then
    local fv = {}
    for j = i + 2, i + 1 + n do
      fv[#fv + 1] = ARGV[j]
    end
    redis.call('XADD', KEYS[1], 'MAXLEN', '~', env.maxLen, '*', unpack(fv))
    copied[#copied + 1] = id
    last = id
  end
  i = i + 2 + n
end
if #copied > 0 then
  redis.call('XTRIM', KEYS[1], 'MINID', '~', string.format('%d', now - env.maxAge))
  redis.call('PEXPIRE', KEYS[1], string.format('%d', env.maxAge))
  redis.call('SET', KEYS[2], last, 'PX', ARGV[2])
end
local out = {'OK', last}
for _, id in ipairs(copied) do
  out[#out + 1] = id
end
return out
