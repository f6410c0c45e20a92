-- mutex_leave.lua (also rwmutex.leave and reentrant.leave): take a cohort
-- out of a lock's line when the last of its waiting calls gave up (see
-- lock_lib.lua), so that releases stop waking it; when the lock is free and
-- the cohort was in line, wake the next cohort in line, which a release may
-- have passed over for the one that left.
-- KEYS[1] lock hash
-- Arguments: LeaveArgs (lock.go): the cohort, the wake channel, the call that
-- gave up (its number in the cohort), and stale, how long, in ms, its
-- departure stands (the stale time of its place in line)
-- The cohort's entry becomes a departure of that call, which refuses the
-- call's attempts that arrive later still (a request delivered after its
-- caller gave up); an entry of a later call of the cohort (another waiter
-- of the process that took over meanwhile) is left alone.
-- Run twice, the second run finds the departure recorded and does the same
-- again, waking nobody.
-- Returns {1}.
--@use lock_lib
local lock = KEYS[1]
lock_hash(lock)
-- Every hold has its fencing token in field f: the mutex's, the rwmutex's
-- write hold and the reentrant lock's.
local held = redis.call('HEXISTS', lock, 'f') == 1
if lock_depart(lock, cohort, call, stale, held) and not held then
  local line = lock_vacate(lock)
  if #line > 0 then
    redis.call(publish, wake .. ':' .. line[1][1], 'u')
  end
end
return {1}
