-- reentrant_settle.lua: on a quorum node that did not grant it, end what a
-- first-hold acquisition that a majority granted left there: the place of
-- the caller's cohort in the lock's line (see lock_lib.lua), which becomes
-- a departure of its call. It takes the KEYS and ARGV of
-- reentrant_acquire.lua: ARGV[9] "<stale ms> <call> <cohort>" for a waiting
-- caller. A hold of the owner there is left alone. Run twice, it does the
-- same.
-- Returns {1}.
local stale, call, cohort = string.match(ARGV[9] or '', '^(%d+) (%d+) (.*)$')
if not cohort then
  return {1}
end
lock_depart(KEYS[1], cohort, tonumber(call), tonumber(stale), redis.call('HEXISTS', KEYS[1], 'f') == 1)
return {1}
