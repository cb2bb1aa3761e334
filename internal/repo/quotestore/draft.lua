-- draft: what the scripts that change a draft share (--#include draft). KEYS are a draft's
-- (object_keys) and KEYS[9] the tenant's event stream; ARGV[1] is the caller's tenant, ARGV[2]
-- the expected stateVersion ('' = any).
--#include object_keys
--#include quote_index
--#include event_append
-- draft_load(...) reads tenantId, stateVersion, status and the fields named of a DRAFT the
-- caller may change: the values, or nil and the refusal (object_load's, or
-- {'INVALID_STATUS', status} when it is no longer a DRAFT).
local function draft_load(...)
  local s, refused = object_load(ARGV[1], ARGV[2], 'status', ...)
  if refused then return nil, refused end
  if s[3] ~= 'DRAFT' then return nil, {'INVALID_STATUS', tostring(s[3])} end
  return s
end
-- draft_total(subtotal, discount, tax, max) is totalMinor = subtotal - discount + tax, or nil and
-- the refusal: {'DISCOUNT'} over the subtotal | {'OVERFLOW', 'totalMinor'} above max.
local function draft_total(subtotal, discount, tax, max)
  if discount > subtotal then return nil, {'DISCOUNT'} end
  local total = subtotal - discount + tax
  if total > max then return nil, {'OVERFLOW', 'totalMinor'} end
  return total
end
-- draft_now() is the server's clock in ms.
local function draft_now()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
-- draft_save(now, ttl, id, tags, ev, ...) bumps stateVersion, writes the field, value pairs
-- given with updatedAtMs = now and expiresAtMs = now + ttl, moves both keys and the draft's place
-- in the quota set to that expiry, puts the draft at now in the list indexes (quote_index: tags
-- its customer, status and channel tags, '=' for unchanged), appends the event ev = {type,
-- envelope, change} to the tenant's stream KEYS[9] and answers {'OK', HGETALL summary}.
local function draft_save(now, ttl, id, tags, ev, ...)
  local exp = string.format('%.0f', now + ttl)
  local v = redis.call('HINCRBY', KEYS[1], 'stateVersion', 1)
  redis.call('HSET', KEYS[1], 'updatedAtMs', string.format('%.0f', now), 'expiresAtMs', exp, ...)
  object_expire(exp, ttl, id)
  quote_index(now, exp, ttl, id, tags)
  event_append(KEYS[9], event_env(ev[2]), now, ev[1], id,
    {status = redis.call('HGET', KEYS[1], 'status'), stateVersion = v, change = ev[3]})
  return {'OK', redis.call('HGETALL', KEYS[1])}
end
