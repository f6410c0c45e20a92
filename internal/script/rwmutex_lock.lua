-- rwmutex_lock.lua: take the write hold of a readers/writer lock.
-- KEYS[1] writer hash {o = owner token, f = fencing token, a = the attempt
--         that last granted the hold, c = the holder's cohort}, which also
--         keeps the line of the cohorts whose writers wait (see lock_lib.lua)
-- KEYS[2] readers: sorted set of reader owner tokens scored by expiry (server ms)
-- KEYS[3] waiting writers: sorted set of owner tokens scored by expiry
-- KEYS[4] waiting readers: sorted set of owner tokens scored by expiry
-- KEYS[5] readers' turn: sorted set of reader owner tokens scored by expiry
-- KEYS[6] fence counter
-- Arguments: RWLockArgs (rwmutex.go): the owner token, the writers' and
-- readers' wake channels (wwake, rwake), the ttl in ms, the fence counter's
-- margin (see mutex_acquire.lua), waits ('Lock': register as a waiting
-- writer when blocked; not for TryLock), the attempt number (they grow with
-- each attempt of an owner), block, how many fencing tokens to reserve for
-- the hold (the first is its own, the others are for the writers of its
-- process it is passed to), the caller's cohort (the goroutines of its
-- process that queue for the name on its backend), stale, how long, in ms,
-- a waiting writer's place in line outlives this attempt, and call, the
-- number of the caller's acquisition call in its cohort (see lock_lib.lua).
-- A blocked writer that waits also takes a place in the
-- writers' line for its cohort, or keeps the one it has, so that a release,
-- or the last reader out, wakes the writers of the cohort first in line
-- only (see rwmutex_unlock.lua).
-- A call that has been overtaken (its cohort gave up on it, or a later call
-- of the cohort has a place in line) changes nothing: its request arrived
-- after its caller moved on, and must neither wait nor take the lock.
-- An owner that holds the lock already (a retried attempt, or the same
-- request run twice) gets its hold back with the block its grant reserved
-- (see lock_regrant in lock_lib.lua; a block's last token is kept in l).
-- Returns {1, fencing token, last token of the block} when held, {0, ms
-- until a retry may succeed} otherwise.
--@use lock_lib
local t = redis.call('TIME')
local now = t[1] * 1000 + math.floor(t[2] / 1000)

local holder = redis.call('HGET', KEYS[1], 'o')
if holder == owner then
  redis.call('ZREM', KEYS[3], owner)
  local f, l = lock_regrant(KEYS[1], attempt, cohort, call, stale, ttl)
  return {1, f, l}
end
if lock_stale(KEYS[1], cohort, call, attempt) then
  return {0, math.max(math.floor(ttl / 3), 1)}
end

-- A blocked writer records that it waits, which keeps new readers out (writer
-- preference); the record expires unless the writer retries, which it does
-- at least every third of the TTL, so a crashed waiter blocks readers for at
-- most one TTL. notify tells the holders of shared read holds that a writer
-- waits, so that they stop admitting new local readers.
local function blocked(ms, notify)
  if waits then
    redis.call('ZADD', KEYS[3], now + ttl, owner)
    if redis.call('PTTL', KEYS[3]) < ttl then
      redis.call('PEXPIRE', KEYS[3], ttl)
    end
    lock_wait(KEYS[1], cohort, call, stale, holder ~= false, attempt)
    if notify then
      redis.call(publish, rwake, 'i')
    end
  end
  local cap = math.max(math.floor(ttl / 3), 1)
  if ms <= 0 or ms > cap then
    ms = cap
  end
  return {0, ms}
end

if holder then
  return blocked(redis.call('PTTL', KEYS[1]), false)
end
-- Readers that were waiting when the last writer left go first.
redis.call('ZREMRANGEBYSCORE', KEYS[5], '-inf', now)
local turn = redis.call('ZRANGE', KEYS[5], -1, -1, 'WITHSCORES')
if #turn > 0 then
  return blocked(tonumber(turn[2]) - now, false)
end
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now)
local first = redis.call('ZRANGE', KEYS[2], 0, 0, 'WITHSCORES')
if #first > 0 then
  return blocked(tonumber(first[2]) - now, true)
end

-- The token is the larger of the counter plus one and the server clock in
-- microseconds, as for every other primitive.
local token = math.max((tonumber(redis.call('GET', KEYS[6])) or 0) + 1, t[1] * 1000000 + t[2])
local s = string.format('%.0f', token)
-- The counter expires fence_margin ms after the clock passes it (see
-- mutex_acquire.lua).
local nowus = t[1] * 1000000 + t[2]
redis.call('SET', KEYS[6], string.format('%.0f', token + block - 1), 'PX', math.max(math.ceil((token + block - 1 - nowus) / 1000), 0) + fence_margin)
if lock_departs(KEYS[1], cohort, attempt) then
  lock_depart(KEYS[1], cohort, call, stale, true, attempt)
end
redis.call('HSET', KEYS[1], 'o', owner, 'f', s, 'a', attempt, 'c', cohort)
if block ~= 1 then
  redis.call('HSET', KEYS[1], 'l', string.format('%.0f', token + block - 1))
end
redis.call('PEXPIRE', KEYS[1], ttl)
redis.call('ZREM', KEYS[3], owner)
return {1, token, token + block - 1}
