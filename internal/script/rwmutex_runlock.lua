-- rwmutex_runlock.lua: end a read hold (rwmutex.runlock), or give back a
-- grant (rwmutex.rlock_undo, the undo of rwmutex_rlock.lua). The two scripts
-- are this source with its variant release true for the former, false for
-- the latter.
-- KEYS as rwmutex_lock.lua (KEYS[6] unused)
-- Arguments of a release: RWRUnlockArgs (rwmutex.go): the owner token (one RLock
-- call), wwake, the writers' wake channel (the last reader out wakes the
-- writers of the cohort first in the writers' line, on the channel followed
-- by ':' and the cohort; see rwmutex_lock.lua), depart and refuse (below),
-- and attempts, the attempts whose holds (members '<owner>:<attempt>', see
-- rwmutex_rlock.lua) end. An undo takes the arguments of rwmutex_rlock.lua
-- (RWRLockArgs), of which it reads owner, wwake, ttl and attempt, the one
-- attempt it undoes (the earlier ones are not its to end).
-- A release also withdraws the owner from the waiting readers and from the
-- readers' turn, as after an RLock that gave up (on a quorum, a node that did
-- not grant the hold may still have it waiting); an undo leaves them as they
-- are. A release with depart (some attempts of the RLock had their
-- replies lost, and may still arrive) also records the owner's departure,
-- 'x:<owner>' among the waiting readers for refuse ms: an attempt of the
-- owner that arrives later neither waits nor takes a hold. Afterwards none of those attempts holds anything, whatever the call
-- found: run twice, the second run finds the work done and reports it done.
-- Returns {1}.
--@variant release
--@use lock_lib
local t = redis.call('TIME')
local now = t[1] * 1000 + math.floor(t[2] / 1000)
local left = false -- this call took something that may have kept writers out
if release then
  redis.call('ZREM', KEYS[4], owner)
  left = redis.call('ZREM', KEYS[5], owner) == 1
  if depart then
    redis.call('ZADD', KEYS[4], now + refuse, 'x:' .. owner)
    if redis.call('PTTL', KEYS[4]) < refuse then
      redis.call('PEXPIRE', KEYS[4], refuse)
    end
  end
end
-- An undo's arguments have no attempts, a release's no attempt: each reads
-- its own. An undo records the departure of its attempt,
-- 'x:<owner>:<attempt>' among the waiting readers for ttl ms: should the
-- attempt itself arrive after its undo (a request delivered late), it
-- neither waits nor takes a hold; the owner's later attempts are not
-- refused.
local ending
if release then
  ending = attempts
else
  ending = {attempt}
  redis.call('ZADD', KEYS[4], now + ttl, 'x:' .. owner .. ':' .. attempt)
  if redis.call('PTTL', KEYS[4]) < ttl then
    redis.call('PEXPIRE', KEYS[4], ttl)
  end
end
for _, a in ipairs(ending) do
  local member = owner .. ':' .. a
  local score = tonumber(redis.call('ZSCORE', KEYS[2], member))
  if score then
    redis.call('ZREM', KEYS[2], member)
    left = true
  end
end
if left then
  -- The last reader out, with no reader's turn pending, wakes the writers.
  redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now)
  redis.call('ZREMRANGEBYSCORE', KEYS[5], '-inf', now)
  if redis.call('EXISTS', KEYS[2]) == 0 and redis.call('EXISTS', KEYS[5]) == 0 then
    local line = lock_line(KEYS[1])
    if #line > 0 then
      redis.call(publish, wwake .. ':' .. line[1][1], 'r')
    end
  end
end
return {1}
