-- session_live: the per-user layout's live marker (--#include session_live). A session is live
-- iff its field "<idPart>:live" (LIVE, from session_fields) exists; its field TTL is the end of
-- the session's idle window and its value is "<createdAtMs>.<verifierMac>", followed by
-- ".<absoluteExpiresAtMs>" when the deadline is not createdAtMs + IMPLICIT_ABSOLUTE: the
-- session's creation, the token's verifier MAC and its absolute deadline in one field (a plain
-- user's hash holds nothing else but userId and tenantId: docs/KEYS.md).
-- live_value(created, mac, abs) is the marker's value (created and abs in ms); live_split(v) →
-- abs, mac, created (abs and created numbers), all nil when v is absent or does not parse.
--#include session_fields
local function live_value(created, mac, abs)
  local v = string.format('%d', created) .. '.' .. mac
  if abs ~= created + IMPLICIT_ABSOLUTE then
    v = v .. '.' .. string.format('%d', abs)
  end
  return v
end
local function live_split(v)
  if not v then
    return nil
  end
  local created, mac, abs = string.match(v, '^(%d+)%.([%w_-]+)%.(%d+)$')
  if not created then
    created, mac = string.match(v, '^(%d+)%.([%w_-]+)$')
  end
  created = tonumber(created)
  if not created then
    return nil
  end
  return tonumber(abs) or created + IMPLICIT_ABSOLUTE, mac, created
end
