-- case_history: case_history(maxlen, now, transition, from, to, level, team, reason, actor,
-- version, assignee) appends one transition to the case's bounded history stream, KEYS[2]
-- (MAXLEN maxlen; every value a string; assignee only when the case has one). Put into the
-- scripts that move a case (--#include case_history).
local function case_history(maxlen, now, transition, from, to, level, team, reason, actor, version, assignee)
  local entry = {'atMs', now, 'transition', transition, 'fromStatus', from, 'toStatus', to,
    'escalationLevel', level, 'assignedTeam', team, 'reason', reason, 'actor', actor,
    'stateVersion', version}
  if assignee and assignee ~= '' then
    entry[#entry + 1] = 'assignee'
    entry[#entry + 1] = assignee
  end
  redis.call('XADD', KEYS[2], 'MAXLEN', maxlen, '*', unpack(entry))
end
