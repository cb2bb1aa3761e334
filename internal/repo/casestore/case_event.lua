-- case_event: a case's transition event in its tenant's stream (--#include case_event; the
-- event_append kit). Every case transition's data has the same keys (docs/EVENTS.md).
--#include event_append
-- case_event(key, env, now, type, id, from, to, level, team, assignee, version, auto) appends
-- type for case id: status to (fromStatus from), level, team, whether a person is assigned (the
-- assignee is a raw user id: never in an event; '' = the team's queue), stateVersion; auto
-- (case.escalated only) tells the sweeper's escalation from a caller's.
local function case_event(key, env, now, typ, id, from, to, level, team, assignee, version, auto)
  event_append(key, env, now, typ, id, {status = to, fromStatus = from, level = tonumber(level),
    team = team, assigned = (assignee or '') ~= '', stateVersion = version, auto = auto})
end
