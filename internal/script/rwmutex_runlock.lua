-- rwmutex_runlock.lua: end a read hold (rwmutex.runlock), or give back a
-- grant (rwmutex.rlock_undo, the undo of rwmutex_rlock.lua). The two scripts
-- are this source after a first line that sets release: true for the
-- former, false for the latter.
-- KEYS as rwmutex_lock.lua (KEYS[6] unused)
-- ARGV[1] publish command, ARGV[2] owner token, ARGV[3] readers' wake channel
-- (unused), ARGV[4] writers' wake channel
-- A release also withdraws the owner from the waiting readers and from the
-- readers' turn, as after an RLock that gave up (on a quorum, a node that did
-- not grant the hold may still have it waiting); an undo leaves them as they
-- are.
-- Returns {1} when released, {-1} when nothing was held (never taken,
-- released, or expired), {-2} when a writer holds the lock.
local t = redis.call('TIME')
local now = t[1] * 1000 + math.floor(t[2] / 1000)
local owner = ARGV[2]
local left = false -- this call took something that may have kept writers out
if release then
  redis.call('ZREM', KEYS[4], owner)
  left = redis.call('ZREM', KEYS[5], owner) == 1
end
local score = tonumber(redis.call('ZSCORE', KEYS[2], owner))
local status = -1
if score then
  redis.call('ZREM', KEYS[2], owner)
  if score > now then
    status = 1
  end
  left = true
end
if left then
  -- The last reader out, with no reader's turn pending, wakes the writers.
  redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now)
  redis.call('ZREMRANGEBYSCORE', KEYS[5], '-inf', now)
  if redis.call('EXISTS', KEYS[2]) == 0 and redis.call('EXISTS', KEYS[5]) == 0 then
    redis.call(ARGV[1], ARGV[4], 'r')
  end
end
if status ~= 1 and redis.call('HGET', KEYS[1], 'o') then
  status = -2
end
return {status}
