-- mutex_settle.lua: on a quorum node that did not grant it, end what an
-- acquisition that a majority granted left there: the caller's place in the
-- lock's line (see lock_lib.lua), which becomes a departure of its call.
-- It takes the KEYS and ARGV of mutex_acquire.lua: KEYS[1] lock hash,
-- ARGV[9] the caller's cohort, ARGV[10] '1' when the caller waited (only a
-- waiting call takes a place), ARGV[11] stale ms, ARGV[13] the call.
-- A hold of the owner there (a grant whose reply was lost) is left alone:
-- its release ends it with the others. Run twice, or on a node where the
-- call left nothing, it records the same departure again.
-- Returns {1}.
local lock, cohort, waits = KEYS[1], ARGV[9] or '', ARGV[10] == '1'
local stale, call = tonumber(ARGV[11]) or 3000, tonumber(ARGV[13]) or 0
if not waits or cohort == '' or call == 0 then
  return {1}
end
--@lock_lib
lock_depart(lock, cohort, call, stale, redis.call('HEXISTS', lock, 'f') == 1)
return {1}
