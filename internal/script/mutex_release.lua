-- mutex_release.lua: end an exclusive hold and wake one waiter per process.
-- KEYS[1] lock hash, KEYS[2] fence counter (unused; the KEYS of mutex_acquire)
-- ARGV[1] publish command, ARGV[2] owner token, ARGV[3] wake channel,
-- ARGV[4] yield ms (default 0)
-- When another cohort waited during the hold (w) and ARGV[4] is not 0, the
-- release leaves a yield marker {y = the holder's cohort} for ARGV[4] ms in
-- place of the hold: the waiting cohorts, woken by the release, get the
-- lock before the releaser's own goroutines, which are refused until it
-- expires (see mutex_acquire.lua).
-- Afterwards the owner holds nothing, whatever it found (a lock held by
-- another owner is left alone): run twice, the second run finds the work
-- done and reports it done.
-- Returns {1}.
if redis.call('HGET', KEYS[1], 'o') == ARGV[2] then
  local yield = tonumber(ARGV[4]) or 0
  local cohort = redis.call('HGET', KEYS[1], 'c')
  local waited = redis.call('HGET', KEYS[1], 'w')
  redis.call('DEL', KEYS[1])
  if waited and cohort and yield > 0 then
    redis.call('HSET', KEYS[1], 'y', cohort)
    redis.call('PEXPIRE', KEYS[1], yield)
  end
  redis.call(ARGV[1], ARGV[3], 'u')
end
return {1}
