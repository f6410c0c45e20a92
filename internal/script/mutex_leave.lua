-- mutex_leave.lua (also rwmutex.leave and reentrant.leave): take a cohort
-- out of a lock's line when the last of its waiting calls gave up (see
-- lock_lib.lua), so that releases stop waking it; when the lock is free and
-- the cohort was in line, wake the next cohort in line, which a release may
-- have passed over for the one that left.
-- KEYS[1] lock hash
-- ARGV[1] publish command, ARGV[2] the cohort, ARGV[3] wake channel,
-- ARGV[4] the call that gave up (its number in the cohort), ARGV[5] how
-- long, in ms, its departure stands (the stale time of its place in line)
-- The cohort's entry becomes a departure of that call, which refuses the
-- call's attempts that arrive later still (a request delivered after its
-- caller gave up); an entry of a later call of the cohort (another waiter
-- of the process that took over meanwhile) is left alone.
-- Run twice, the second run finds the departure recorded and does the same
-- again, waking nobody.
-- Returns {1}.
local lock, pub, cohort, wake = KEYS[1], ARGV[1], ARGV[2], ARGV[3]
local call, stale = tonumber(ARGV[4]), tonumber(ARGV[5])
-- Every hold has its fencing token in field f: the mutex's, the rwmutex's
-- write hold and the reentrant lock's.
local held = redis.call('HEXISTS', lock, 'f') == 1
if lock_depart(lock, cohort, call, stale, held) and not held then
  local line = lock_vacate(lock)
  if #line > 0 then
    redis.call(pub, wake .. ':' .. line[1][1], 'u')
  end
end
return {1}
