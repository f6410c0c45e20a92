-- mutex_acquire.lua: take an exclusive hold (see lock_lib.lua for the lock
-- hash).
-- KEYS[1] lock (a string or a hash), KEYS[2] fence counter
-- Arguments: MutexAcquireArgs (lock.go). fence_margin is how long the counter
-- outlives the moment the clock passes it (see below); block is how many
-- fencing tokens to reserve for the hold: the first is its own, the others
-- are for the holders it is passed to inside its process; cohort is the
-- caller's cohort (the goroutines of its process that queue for the name on
-- its backend); waits says that the caller waits for the lock (Lock, not
-- TryLock); stale is how long, in ms, a waiting caller's place in line
-- outlives this attempt: longer than the caller can go without trying
-- again; clock is the caller's clock in microseconds, on a quorum (0:
-- none); call is the number of the caller's acquisition call in its cohort
-- (see lock_lib.lua).
-- A waiting caller that finds the lock taken takes a place in line for its
-- cohort, or keeps the one it has, so that a release wakes the cohort first
-- in line only; a release after another cohort waited leaves a yield
-- marker that refuses the releasing cohort for a few milliseconds. A call
-- that has been overtaken (its cohort gave up on it, or a later call of the
-- cohort has a place in line) neither joins the line nor takes the lock:
-- its request arrived after its caller moved on.
-- An owner that holds the lock already (a retried attempt whose first reply
-- was lost, or the same request run twice) gets its hold back (see
-- lock_regrant in lock_lib.lua) with attempt as the attempt that granted
-- it, so that the undo of an earlier attempt leaves it alone, and with the
-- block its grant reserved.
-- Returns {1, fencing token, last token of the block} when held, {0, ms
-- until the holder's hold (or the yield) expires} otherwise.
local lock = KEYS[1]
-- The fast path (see take_lib.lua): a call's first attempt that reserves
-- no block for other holders. A later attempt records the call's departure
-- (see lock_departs in lock_lib.lua, and the hash in its header), so it
-- turns a string into the hash; a block's last token is kept in the hash
-- (l), so that an attempt that finds the hold gets the block its grant
-- reserved.
if attempt == 1 and block == 1 then
--@use draw_lib
--@use take_lib
  if granted then
    return {1, granted, granted}
  end
end
--@use lock_lib
lock_hash(lock)
local state = redis.call('HMGET', lock, 'o', 'y', 'qn')
local holder = state[1]
if holder == owner then
  local f, l = lock_regrant(lock, attempt, cohort, call, stale, ttl)
  return {1, f, l}
end
if holder then
  if waits then
    lock_wait(lock, cohort, call, stale, true, attempt)
  end
  return {0, redis.call('PTTL', lock)}
end
if lock_stale(lock, cohort, call, attempt) then
  return {0, 1}
end
local yields, left = lock_yielding(lock)
if yields == cohort then
  if waits then
    lock_wait(lock, cohort, call, stale, false, attempt)
  end
  return {0, left}
end
--@use draw_lib
lock_grant(lock, owner, token, attempt, cohort, call, stale, ttl)
if last ~= token then
  redis.call('HSET', lock, 'l', lock_num(last))
end
return {1, token, last}
