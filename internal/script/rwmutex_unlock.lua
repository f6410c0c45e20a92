-- rwmutex_unlock.lua: end the write hold (rwmutex.unlock), or give back a
-- grant (rwmutex.lock_undo, the undo of rwmutex_lock.lua). The two scripts
-- are this source with its variant release true for the former, false for
-- the latter.
-- KEYS as rwmutex_lock.lua (KEYS[6], the fence counter, for a release)
-- Arguments of a release: RWUnlockArgs (rwmutex.go): the owner token, wwake, the
-- writers' wake channel (a release wakes the writers of the cohort first in
-- line, on the channel followed by ':' and the cohort; with nobody in line
-- it wakes no writer), rwake, the readers' wake channel, turn, how long, in
-- ms, the readers that were waiting keep writers out while they come in,
-- used, the last token the hold's holders used (0: unknown) and last, the
-- last token of the block its grant reserved (see give_back_lib.lua: the
-- rest of the block is given back). Arguments of an undo: those of
-- rwmutex_lock.lua (RWLockArgs), of which it reads owner, wwake, rwake and
-- the attempt to undo.
-- A release also withdraws the owner from the waiting writers, as after a
-- Lock that gave up (on a quorum, a node that did not grant the hold may
-- still have it waiting); an undo leaves the waiting as it is, and acts
-- only while the hold is the one that attempt granted: a late undo leaves
-- alone the hold that a later attempt of the same owner took or took back.
-- Afterwards the owner holds nothing (after an undo: nothing that attempt
-- granted), whatever it found (a write lock held by another owner is left
-- alone): run twice, the second run finds the work done and reports it
-- done.
-- Returns {1}.
--@variant release
--@use lock_lib
local t = redis.call('TIME')
local now = t[1] * 1000 + math.floor(t[2] / 1000)
local waited = false
if release then
  waited = redis.call('ZREM', KEYS[3], owner) == 1
end
local holder = redis.call('HGET', KEYS[1], 'o')
if holder == owner and not release and tonumber(redis.call('HGET', KEYS[1], 'a')) ~= attempt then
  return {1}
end
if holder ~= owner then
  if waited and not holder then
    -- The last waiting writer gone, the readers it kept out may come in.
    redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', now)
    if redis.call('EXISTS', KEYS[3]) == 0 then
      redis.call(publish, rwake, 'c')
    end
  end
  return {1}
end
--@use give_back_lib
if release then
  give_back(KEYS[6], used, last)
end
-- The hold ends; the writers' line stays (see lock_lib.lua).
local line = lock_vacate(KEYS[1])
-- As with sync.RWMutex, the readers that waited for this writer get in before
-- the next writer: they are given a turn, which writers wait for until every
-- one of them came in or the turn expired.
local given = false
if release then
  redis.call('ZREMRANGEBYSCORE', KEYS[4], '-inf', now)
  local waiting = {}
  for _, r in ipairs(redis.call('ZRANGE', KEYS[4], 0, -1)) do
    -- 'x:<owner>' is a reader's departure (see rwmutex_runlock.lua).
    if string.sub(r, 1, 2) ~= 'x:' then
      waiting[#waiting + 1] = r
    end
  end
  if #waiting > 0 then
    local expiry = now + turn
    for _, r in ipairs(waiting) do
      redis.call('ZADD', KEYS[5], expiry, r)
      redis.call('ZREM', KEYS[4], r)
    end
    if redis.call('PTTL', KEYS[5]) < turn then
      redis.call('PEXPIRE', KEYS[5], turn)
    end
    given = true
  end
end
if not given and #line > 0 then
  -- Wake the writers of the cohort first in line, and no other.
  redis.call(publish, wwake .. ':' .. line[1][1], 'w')
end
-- Wake every waiting reader at once.
redis.call(publish, rwake, 'w')
return {1}
