-- rwmutex_settle.lua: on a quorum node that did not grant it, end what a
-- write acquisition that a majority granted left there: the writer among
-- the waiting writers, and its cohort's place in the writers' line (see
-- lock_lib.lua), which becomes a departure of its call. It takes the KEYS
-- and arguments of rwmutex_lock.lua (RWLockArgs, rwmutex.go): owner, waits,
-- attempt (the one granted), cohort, stale and call. The departure is that
-- of the attempt granted (see lock_depart).
-- A hold of the owner there is left alone. Run twice, it does the same.
-- Returns {1}.
if not waits then
  return {1}
end
--@use lock_lib
redis.call('ZREM', KEYS[3], owner)
if cohort ~= '' and call > 0 then
  lock_depart(KEYS[1], cohort, call, stale, redis.call('HEXISTS', KEYS[1], 'f') == 1, attempt)
end
return {1}
