-- mutex_take.lua: the uncontended acquisition of a mutex's lock, with the
-- few arguments that case needs: the first attempt of an acquisition when
-- no other goroutine of the caller's process waits for the lock, so that
-- no block of fencing tokens is reserved (block is 1). It is
-- mutex_acquire.lua's fast path alone (see take_lib.lua); whatever else
-- the lock's key holds is left to mutex_acquire.lua, which the caller
-- sends next.
-- KEYS[1] lock (a string or a hash), KEYS[2] fence counter
-- Arguments: MutexTakeArgs (lock.go); fence_margin as in draw_lib.lua.
-- Returns the fencing token (> 0) when held; minus the ms until the hold
-- expires when another owner's uncontended hold (a string) has the lock;
-- 0 otherwise (a hash: a line, departures, a yield marker or a hold that a
-- waiter contended; or a string that is no hold): nothing was taken and
-- no place in line was kept, and only mutex_acquire.lua can decide.
--@variant block
--@variant fence_margin
--@use draw_lib
--@use take_lib
if granted then
  return granted
end
if hold and string.find(hold, '^%S+ %d+ ') then
  return -math.max(redis.call('PTTL', KEYS[1]), 1)
end
return 0
