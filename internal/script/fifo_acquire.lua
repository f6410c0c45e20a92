-- fifo_acquire.lua: take k permits if they are free on top of what the
-- waiters ahead of the caller want (see fifo_lib.lua for KEYS).
-- Arguments: FIFOAcquireArgs (fifo.go): the owner token of the new hold, the
-- wake channel prefix, the caller's waiter id (its place in the queue, if it
-- has one, else ''), k permits, the limit n, the ttl in ms, the heartbeat
-- timeout in ms, the fence counter's margin, the attempt number (they
-- grow with each attempt of an owner) and, on a quorum, slot: the permit
-- slot from which the grant takes the first free ones (from 1; 0: no
-- slots, see fifo_lib.lua) and caller_us, the caller's clock in microseconds
-- on a quorum (0: none), which the token proposes (see next_number).
-- An owner that holds already (a retried attempt whose first reply was
-- lost, or the same request run twice) gets its hold back with its token,
-- the expiry of a new grant, and attempt as the attempt that granted it, so
-- that the undo of an earlier attempt leaves it alone (an earlier attempt
-- that arrives late changes the recorded one not). A waiter that is granted
-- departs (see fifo_lib.lua); an attempt under a waiter id that departed
-- takes nothing: it arrived after its call was over.
-- Returns {1, fencing token} when held (followed by the hold's slots when
-- it has any), or {0, ms until the earliest
-- deadline (0: none), the caller's place in the queue from 1, -1 when it
-- is not queued, or -3 when its waiter id departed}. Fails with "LIMIT <n>" when the name is in use with
-- another limit.
--@use fifo_lib
local stored = limit()
if stored and stored ~= n then
  return redis.error_reply('LIMIT ' .. num(stored))
end
local holder, id, k = 'h:' .. owner, waiter, permits
local freed = reclaim()
local rec = redis.call('HGET', state, holder)
if rec then
  local held, token, ticket, granted, slots = parse(rec)
  if (tonumber(granted) or 0) <= attempt then
    redis.call('HSET', state, holder, record(held, token, ticket, attempt, slots))
  end
  if (tonumber(redis.call('ZSCORE', deadlines, holder)) or 0) < at(ttl) then
    redis.call('ZADD', deadlines, num(at(ttl)), holder)
  end
  extend(ttl)
  if slots ~= '' then
    return {1, token, 's' .. slots}
  end
  return {1, token}
end
if id ~= '' and departed(id) then
  -- The Acquire call that waited under id is over (this request arrived
  -- after its caller moved on), or its grant's reply was lost and the hold
  -- has expired since: it takes nothing, and hears that its id departed.
  return {0, hint(), -3}
end
local ok, rank = fits(id, k, n)
if not ok then
  if freed then
    wake()
  end
  local place = -1
  if rank then
    place = rank + 1
  end
  return {0, hint(), place}
end
local slots
if slot > 0 then
  slots = slots_take(k, n, slot)
  if not slots then
    -- The slot map disagrees with the permits out: not granted here.
    return {0, hint(), -1}
  end
end
local ticket = 0
if rank then
  ticket = tonumber(redis.call('ZSCORE', queue, id))
end
if id ~= '' then
  depart(id, timeout)
end
local token = next_number(caller_us)
redis.call('HSET', state, holder, record(k, token, ticket, attempt, slots), 'n', num(n))
redis.call('HINCRBY', state, 'used', k)
redis.call('ZADD', deadlines, num(at(ttl)), holder)
extend(ttl)
if freed then
  wake()
end
if slots then
  return {1, token, 's' .. slots}
end
return {1, token}
