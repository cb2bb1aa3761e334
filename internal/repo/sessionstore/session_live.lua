-- session_live: the per-user layout's live marker (--#include session_live). A session is live
-- iff its field "<idPart>:live" (LIVE, from session_fields) exists; its field TTL is the end of
-- the session's idle window and its value is "<absoluteExpiresAtMs>.<verifierMac>": the
-- session's absolute deadline and the token's verifier MAC in one field (a field of its own
-- costs a session about 64 B: name, value and field TTL).
-- live_value(abs, mac) is the marker's value; live_split(v) → abs (a number) and mac, both nil
-- when v is absent or does not parse.
local function live_value(abs, mac)
  return string.format('%d', abs) .. '.' .. mac
end
local function live_split(v)
  if not v then
    return nil, nil
  end
  local abs, mac = string.match(v, '^(%d+)%.(.+)$')
  return tonumber(abs), mac
end
