-- mutex_settle.lua: on a quorum node that did not grant it, end what an
-- acquisition that a majority granted left there: the caller's place in the
-- lock's line (see lock_lib.lua), which becomes the departure of the
-- attempt granted (see lock_depart): should the caller give the grant back
-- after all, its next attempt is not refused here.
-- It takes the KEYS and arguments of mutex_acquire.lua (MutexAcquireArgs,
-- lock.go): KEYS[1] lock hash; attempt (the one granted), cohort, waits
-- (only a waiting call takes a place), stale and call.
-- A hold of the owner there (a grant whose reply was lost) is left alone:
-- its release ends it with the others. Run twice, or on a node where the
-- call left nothing, it records the same departure again.
-- Returns {1}.
local lock = KEYS[1]
if not waits or cohort == '' or call == 0 then
  return {1}
end
--@use lock_lib
lock_hash(lock)
lock_depart(lock, cohort, call, stale, redis.call('HEXISTS', lock, 'f') == 1, attempt)
return {1}
