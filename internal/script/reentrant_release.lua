-- reentrant_release.lua: leave a re-entrant hold once, ending it with the
-- owner's last Unlock.
-- KEYS as reentrant_acquire.lua (KEYS[2] unused)
-- Arguments: ReentrantReleaseArgs (reentrant.go): the owner token, the wake
-- channel (the end of a hold wakes the cohort first in line, on this
-- channel followed by ':' and the cohort; nobody when nobody is in line),
-- left, the owner's hold count after this release (0 ends the hold), grant,
-- the attempt that granted the hold (see reentrant_acquire.lua), and for
-- the last release, the owner's cohort and yield ms (0: none):
-- when another cohort waited, the owner's cohort is refused the lock that
-- long, so that the process the release wakes gets it first rather than
-- another scope of the releasing process (see lock_lib.lua)
-- The count is set, not decremented, and the release acts only on the hold
-- that attempt grant granted, so that a retried release is harmless and a
-- late one never touches a later hold of the same owner.
-- Returns {1, count left} when what should remain of the hold remains
-- (nothing, for a count of 0, whatever the release found), {-1} when the
-- owner holds nothing of that hold, {-2} when another owner holds the lock.
--@use lock_lib
if redis.call('HEXISTS', KEYS[1], owner) == 0 or tonumber(redis.call('HGET', KEYS[1], 'g')) ~= grant then
  if left <= 0 then
    return {1, 0}
  end
  if redis.call('HEXISTS', KEYS[1], 'f') == 1 and redis.call('HEXISTS', KEYS[1], owner) == 0 then
    return {-2}
  end
  return {-1}
end
if left <= 0 then
  -- The hold ends, the line stays: wake the cohort first in line, if any.
  lock_release(KEYS[1], publish, wake, yield, cohort)
  return {1, 0}
end
redis.call('HSET', KEYS[1], owner, left)
return {1, left}
