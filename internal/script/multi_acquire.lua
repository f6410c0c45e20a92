-- multi_acquire.lua: take the exclusive holds of several mutexes at once,
-- all or none. The holds are ordinary mutex holds (see lock_lib.lua).
-- KEYS[2i-1] lock hash of member i, KEYS[2i] its fence counter
-- Arguments: MultiArgs (multi.go): the owner token, the ttl in ms, the
-- fence counter's margin (see mutex_acquire.lua), the attempt number (they
-- grow with each attempt of an owner), the caller's cohort, stale, how
-- long, in ms, a waiting caller's place in line outlives this attempt (0
-- when the caller does not wait), call, the number of the caller's
-- acquisition call in its cohort (see lock_lib.lua), and wakes, the wake
-- channels of every member (for the release)
-- A waiting caller that finds a member taken takes a place in that member's
-- line for its cohort (or keeps the one it has), so that the member's
-- release wakes it in turn. A call that has been overtaken on a member (its
-- cohort gave up on it) neither joins a line nor takes the locks: its
-- request arrived after its caller moved on.
-- A member that the owner holds already (a retried attempt whose first reply
-- was lost, or the same request run twice) is held again with its token
-- (see lock_regrant in lock_lib.lua).
-- Returns {1, token of member 1, ..., token of member n} when all were free
-- or held by the owner, {0, ms until the blocking hold expires, index of the
-- first member held by another owner} otherwise.
--@use lock_lib
local n = #KEYS / 2
for i = 1, n do
  local lock = KEYS[2 * i - 1]
  lock_hash(lock)
  if lock_stale(lock, cohort, call, attempt) then
    return {0, 1, i}
  end
  local holder = redis.call('HGET', lock, 'o')
  if holder and holder ~= owner then
    if stale > 0 then
      lock_wait(lock, cohort, call, stale, true, attempt)
    end
    return {0, redis.call('PTTL', lock), i}
  end
end
local out = {1}
for i = 1, n do
  local lock, fence = KEYS[2 * i - 1], KEYS[2 * i]
  if redis.call('HGET', lock, 'o') == owner then
    out[i + 1] = lock_regrant(lock, attempt, cohort, call, math.max(stale, 1), ttl)
  else
    local token = math.max((tonumber(redis.call('GET', fence)) or 0) + 1, lock_us())
    -- The counter expires fence_margin ms after the clock passes it (see
    -- mutex_acquire.lua).
    redis.call('SET', fence, lock_num(token), 'PX', math.max(math.ceil((token - lock_us()) / 1000), 0) + fence_margin)
    -- A release's yield marker does not refuse a multi-lock.
    lock_grant(lock, owner, token, attempt, cohort, call, math.max(stale, 1), ttl)
    out[i + 1] = token
  end
end
return out
