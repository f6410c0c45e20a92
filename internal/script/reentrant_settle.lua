-- reentrant_settle.lua: on a quorum node that did not grant it, end what a
-- first-hold acquisition that a majority granted left there: the place of
-- the caller's cohort in the lock's line (see lock_lib.lua), which becomes
-- a departure of its call. It takes the KEYS and arguments of
-- reentrant_acquire.lua (ReentrantAcquireArgs), of which it reads attempt
-- (the one granted: the departure is that attempt's, see lock_depart), the
-- cohort ('' but for a waiting caller), stale and call. A hold of the owner there is left alone. Run twice, it does the
-- same.
-- Returns {1}.
if cohort == '' then
  return {1}
end
--@use lock_lib
lock_depart(KEYS[1], cohort, call, stale, redis.call('HEXISTS', KEYS[1], 'f') == 1, attempt)
return {1}
