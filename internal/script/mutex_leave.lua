-- mutex_leave.lua (also rwmutex.leave and reentrant.leave): take a cohort
-- out of a lock's line when its last waiter gave up (see lock_lib.lua), so
-- that releases stop waking it; when the lock is free, wake the next cohort
-- in line, which a release may have passed over for the one that left.
-- KEYS[1] lock hash
-- ARGV[1] publish command, ARGV[2] the cohort, ARGV[3] wake channel
-- Run twice, the second run finds the cohort gone and does nothing.
-- Returns {1}.
local lock = KEYS[1]
-- Every hold has its fencing token in field f: the mutex's, the rwmutex's
-- write hold and the reentrant lock's.
if redis.call('HDEL', lock, 'q:' .. ARGV[2]) == 1 and redis.call('HEXISTS', lock, 'f') == 0 then
  local line = lock_vacate(lock)
  if #line > 0 then
    redis.call(ARGV[1], ARGV[3] .. ':' .. line[1][1], 'u')
  end
end
return {1}
