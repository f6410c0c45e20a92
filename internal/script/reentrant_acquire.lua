-- reentrant_acquire.lua: take a re-entrant hold, or enter it again.
-- KEYS[1] lock hash {<owner token> = hold count, f = fencing token, g = the
--         attempt that granted the hold, a = the attempt that last changed
--         the count}, which also keeps the line of the processes whose
--         scopes wait for a first hold (see lock_lib.lua)
-- KEYS[2] fence counter
-- Arguments: ReentrantAcquireArgs (reentrant.go): the owner token, the wake
-- channel (for the undo), the ttl in ms, the fence counter's margin (see
-- mutex_acquire.lua), count, the owner's hold count once this acquisition
-- is done, grant, for a re-entry (count > 1) the attempt that granted the
-- hold it enters, the attempt number, and for a first hold (cohort is ''
-- for re-entries) the caller's cohort (the goroutines of its process that
-- queue for the name on its backend; see lock_lib.lua), stale, how long its
-- place in line outlives this attempt, call, the number of its acquisition
-- call in its cohort, and waits, whether it waits for the lock (Lock, not
-- TryLock: only a waiting caller takes a place in line). unsure is for the
-- undo only.
-- A waiting caller that finds the lock taken takes a place in line for its
-- cohort, or keeps the one it has, so that a release wakes the cohort first
-- in line only (see reentrant_release.lua). A call that has been overtaken
-- (its cohort gave up on it, or a later call of the cohort has a place in
-- line) neither joins the line nor takes the lock: its request arrived
-- after its caller moved on.
-- The count is set, not incremented, so that a retried attempt whose first
-- reply was lost does not count twice. Attempt numbers grow with each attempt
-- of an owner, and the hash records the last one applied: an attempt that
-- arrives after a later one (a request delivered late) changes nothing, and
-- the same attempt run twice has the effect and the reply of one run.
-- A first hold (count 1) by a later attempt is a new grant even when the
-- owner is on the server already (a retried attempt whose first reply was
-- lost, or a hold whose release never arrived): it gets a new token and the
-- expiry of at least a new grant's, so that the hold the owner now counts on is covered
-- for its whole validity and its token is larger than any before it. A
-- re-entry adds to the hold granted by attempt grant only (the attempt
-- names the hold on every node of a quorum, where each node has a token of
-- its own), and leaves its expiry alone: the watchdog (or Extend) owns it,
-- and a fixed lease must end on the server when its holder thinks it does.
-- Returns {1, fencing token, count} when held (a re-entry keeps the token of
-- the first hold), {0, ms until the holder's hold expires} when another owner
-- holds it (or the attempt came late), {0, 0} for a re-entry of a hold that
-- is gone.
--@use lock_lib
local target = count
local mine = redis.call('HEXISTS', KEYS[1], owner) == 1
local last = tonumber(redis.call('HGET', KEYS[1], 'a')) or 0
if mine and last == attempt then
  -- This very attempt, run again.
  return {1, tonumber(redis.call('HGET', KEYS[1], 'f')), tonumber(redis.call('HGET', KEYS[1], owner))}
end
if mine and last > attempt then
  -- An earlier attempt, delivered after a later one.
  if target ~= 1 then
    return {0, 0}
  end
  return {0, redis.call('PTTL', KEYS[1])}
end
if target ~= 1 then
  if mine and tonumber(redis.call('HGET', KEYS[1], 'g')) == grant then
    redis.call('HSET', KEYS[1], owner, target, 'a', attempt)
    return {1, tonumber(redis.call('HGET', KEYS[1], 'f')), target}
  end
  -- The hold this re-entry would add to expired or was deleted: it must not
  -- be recreated behind the back of whoever got in meanwhile.
  return {0, 0}
end
if cohort == '' then
  cohort = nil
end
if cohort and lock_stale(KEYS[1], cohort, call, attempt) then
  return {0, math.max(redis.call('PTTL', KEYS[1]), 1)}
end
if redis.call('HEXISTS', KEYS[1], 'f') == 1 and not mine then
  if cohort and waits then
    lock_wait(KEYS[1], cohort, call, stale, true, attempt)
  end
  return {0, redis.call('PTTL', KEYS[1])}
end
if cohort and not mine then
  -- A release refuses the releasing process a moment, when another
  -- process waited (see reentrant_release.lua).
  local yields, wait = lock_yielding(KEYS[1])
  if yields == cohort then
    if waits then
      lock_wait(KEYS[1], cohort, call, stale, false, attempt)
    end
    return {0, wait}
  end
end
if cohort and lock_departs(KEYS[1], cohort, attempt) then
  lock_depart(KEYS[1], cohort, call, stale, true, attempt)
end
local t = redis.call('TIME')
local nowus = t[1] * 1000000 + t[2]
local token = math.max((tonumber(redis.call('GET', KEYS[2])) or 0) + 1, nowus)
local s = string.format('%.0f', token)
-- The counter expires fence_margin ms after the clock passes it (see
-- mutex_acquire.lua).
redis.call('SET', KEYS[2], s, 'PX', math.max(math.ceil((token - nowus) / 1000), 0) + fence_margin)
redis.call('HDEL', KEYS[1], 'y')
redis.call('HSET', KEYS[1], owner, 1, 'f', s, 'g', attempt, 'a', attempt)
if not mine or redis.call('PTTL', KEYS[1]) < ttl then
  redis.call('PEXPIRE', KEYS[1], ttl)
end
return {1, token, 1}
