-- mutex_release.lua: end an exclusive hold and wake the first cohort in
-- line (see lock_lib.lua); with nobody in line, nobody is woken.
-- KEYS[1] lock hash, KEYS[2] fence counter (unused; the KEYS of mutex_acquire)
-- ARGV[1] publish command, ARGV[2] owner token, ARGV[3] wake channel,
-- ARGV[4] yield ms (default 0)
-- When another cohort waited during the hold and ARGV[4] is not 0, the
-- release leaves a yield marker for ARGV[4] ms: the releasing cohort is
-- refused while it stands, so that the cohort that waited gets the lock
-- before the releaser's own goroutines.
-- Afterwards the owner holds nothing, whatever it found (a lock held by
-- another owner is left alone): run twice, the second run finds the work
-- done and reports it done.
-- Returns {1}.
local state = redis.call('HMGET', KEYS[1], 'o', 'qn')
if state[1] ~= ARGV[2] then
  return {1}
end
if not state[2] then
  -- The fast path: nobody in line (and so no yield marker to leave).
  redis.call('DEL', KEYS[1])
  return {1}
end
--@lock_lib
lock_release(KEYS[1], ARGV[1], ARGV[3], tonumber(ARGV[4]) or 0)
return {1}
