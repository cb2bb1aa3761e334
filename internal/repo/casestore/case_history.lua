-- case_history: case_history(maxlen, now, transition, from, to, level, team, reason, actor,
-- version) appends one transition to the case's bounded history stream, KEYS[2] (MAXLEN
-- maxlen; every value a string). Put into the scripts that move a case (--#include case_history).
local function case_history(maxlen, now, transition, from, to, level, team, reason, actor, version)
  redis.call('XADD', KEYS[2], 'MAXLEN', maxlen, '*',
    'atMs', now, 'transition', transition, 'fromStatus', from, 'toStatus', to,
    'escalationLevel', level, 'assignedTeam', team, 'reason', reason, 'actor', actor,
    'stateVersion', version)
end
