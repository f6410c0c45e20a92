-- rwmutex_rlock.lua: take a read hold of a readers/writer lock.
-- KEYS as rwmutex_lock.lua
-- Arguments: RWRLockArgs (rwmutex.go): the owner token, wwake (for the undo),
-- the ttl in ms, the fence counter's margin (see mutex_acquire.lua), waits
-- (RLock: register as a waiting reader when blocked; not for TryRLock), the
-- attempt number, and earlier, the earlier attempts of the owner whose
-- outcome is unknown (their replies were lost)
-- The owner (one RLock call) waits, and gets its turn, under its own name;
-- each attempt holds under its own member, '<owner>:<attempt>', so that the
-- undo or cleanup of one attempt, however late it comes, never ends the hold
-- of another. The same attempt run twice finds its hold and gets it back
-- with the expiry of a new grant (and a new, larger token). So does an
-- attempt that finds the hold of an earlier attempt of the owner, whose
-- reply was lost: it takes that hold over under its own member, even while
-- a writer waits, since the writer waits for that hold anyway (without
-- this, the orphan hold would keep the writer out, and the writer the
-- owner's retries, until the orphan expired).
-- Returns {1, fencing token} when held, {0, ms until a retry may succeed}
-- otherwise.
local t = redis.call('TIME')
local now = t[1] * 1000 + math.floor(t[2] / 1000)
local member = owner .. ':' .. attempt

local function token()
  local nowus = t[1] * 1000000 + t[2]
  local tk = math.max((tonumber(redis.call('GET', KEYS[6])) or 0) + 1, nowus)
  -- The counter expires fence_margin ms after the clock passes it (see
  -- mutex_acquire.lua).
  redis.call('SET', KEYS[6], string.format('%.0f', tk), 'PX', math.max(math.ceil((tk - nowus) / 1000), 0) + fence_margin)
  return tk
end

-- Hold until expiry: the readers key lives as long as its longest hold.
local function hold(expiry)
  redis.call('ZADD', KEYS[2], expiry, member)
  if redis.call('PTTL', KEYS[2]) < expiry - now then
    redis.call('PEXPIRE', KEYS[2], expiry - now)
  end
end

-- An owner that departed (its RLock gave up, or was released, with attempts
-- whose replies were lost; see rwmutex_runlock.lua), or this attempt, which
-- was undone or settled here already ('x:<owner>:<attempt>', see
-- rwmutex_runlock.lua and rwmutex_rsettle.lua): this attempt arrived late,
-- and must neither wait nor hold. A later attempt of the owner is its
-- caller trying again, and is not refused by the departure of an attempt.
for _, x in ipairs({'x:' .. owner, 'x:' .. member}) do
  local departed = tonumber(redis.call('ZSCORE', KEYS[4], x))
  if departed and departed > now then
    return {0, math.max(math.floor(ttl / 3), 1)}
  end
end
local mine = tonumber(redis.call('ZSCORE', KEYS[2], member))
if mine and mine > now then
  hold(math.max(mine, now + ttl))
  return {1, token()}
end
for _, e in ipairs(earlier) do
  local prior = owner .. ':' .. e
  local score = tonumber(redis.call('ZSCORE', KEYS[2], prior))
  if score and score > now then
    redis.call('ZREM', KEYS[2], prior)
    hold(math.max(score, now + ttl))
    redis.call('ZREM', KEYS[4], owner)
    return {1, token()}
  end
end

-- A blocked reader records that it waits, so that the writer's release gives
-- it a turn before the next writer.
local function blocked(ms)
  if waits then
    redis.call('ZADD', KEYS[4], now + ttl, owner)
    if redis.call('PTTL', KEYS[4]) < ttl then
      redis.call('PEXPIRE', KEYS[4], ttl)
    end
  end
  local cap = math.max(math.floor(ttl / 3), 1)
  if ms <= 0 or ms > cap then
    ms = cap
  end
  return {0, ms}
end

if redis.call('HGET', KEYS[1], 'o') then
  return blocked(redis.call('PTTL', KEYS[1]))
end
redis.call('ZREMRANGEBYSCORE', KEYS[5], '-inf', now)
local turn = redis.call('ZREM', KEYS[5], owner) == 1
if not turn then
  -- Writer preference: a waiting writer keeps new readers out.
  redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', now)
  local writer = redis.call('ZRANGE', KEYS[3], 0, 0, 'WITHSCORES')
  if #writer > 0 then
    return blocked(tonumber(writer[2]) - now)
  end
end
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now)
hold(now + ttl)
redis.call('ZREM', KEYS[4], owner)
return {1, token()}
