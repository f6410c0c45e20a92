-- mutex_release.lua: end an exclusive hold and wake the first cohort in
-- line (see lock_lib.lua); with nobody in line, nobody is woken.
-- KEYS[1] lock hash, KEYS[2] fence counter
-- Arguments: MutexReleaseArgs (lock.go): the owner token, the wake channel,
-- yield ms (0: none), used, the last token the hold's holders used (0:
-- unknown, or no give-back), and last, the last token of the block its
-- grant reserved.
-- When the fence counter still stands at the end of the block (nobody drew
-- a token since), it goes back to the last token used: the tokens the hold
-- did not hand on are given back, so that the counter does not run ahead
-- of the tokens issued (see mutex_acquire.lua: a token is the larger of the
-- counter plus one and the server's clock).
-- A holder whose hold outlasted its block sends used 0: the clock has
-- passed the block then, and the counter is left as it is (see
-- lease.Tenure.Release).
-- When another cohort waited during the hold and yield is not 0, the
-- release leaves a yield marker for yield ms: the releasing cohort is
-- refused while it stands, so that the cohort that waited gets the lock
-- before the releaser's own goroutines.
-- Afterwards the owner holds nothing, whatever it found (a lock held by
-- another owner is left alone): run twice, the second run finds the work
-- done and reports it done.
-- Returns {1}.
local state = redis.call('HMGET', KEYS[1], 'o', 'qn')
if state[1] ~= owner then
  return {1}
end
if used > 0 and last ~= used and tonumber(redis.call('GET', KEYS[2])) == last then
  redis.call('SET', KEYS[2], string.format('%.0f', used), 'KEEPTTL')
end
if not state[2] then
  -- The fast path: nobody in line (and so no yield marker to leave).
  redis.call('DEL', KEYS[1])
  return {1}
end
--@use lock_lib
lock_release(KEYS[1], publish, wake, yield)
return {1}
