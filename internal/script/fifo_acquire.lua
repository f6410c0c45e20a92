-- fifo_acquire.lua: take k permits if they are free on top of what the
-- waiters ahead of the caller want (see fifo_lib.lua for KEYS and ARGV).
-- ARGV[2] owner token of the new hold, ARGV[4] the caller's waiter id (its
-- place in the queue, if it has one), ARGV[5] k, ARGV[6] n, ARGV[7] ttl ms,
-- ARGV[9] fence counter margin ms, ARGV[11] attempt number (they grow with each
-- attempt of an owner).
-- An owner that holds already (a retried attempt whose first reply was
-- lost, or the same request run twice) gets its hold back with its token,
-- the expiry of a new grant, and ARGV[11] as the attempt that granted it, so
-- that the undo of an earlier attempt leaves it alone (an earlier attempt
-- that arrives late changes the recorded one not). A waiter that is granted
-- departs (see fifo_lib.lua); an attempt under a waiter id that departed
-- takes nothing: it arrived after its call was over.
-- Returns {1, fencing token} when held, or {0, ms until the earliest
-- deadline (0: none), the caller's place in the queue from 1, -1 when it
-- is not queued, or -3 when its waiter id departed}. Fails with "LIMIT <n>" when the name is in use with
-- another limit.
local n = tonumber(ARGV[6])
local stored = limit()
if stored and stored ~= n then
  return redis.error_reply('LIMIT ' .. num(stored))
end
local owner, id, k, ttl = 'h:' .. ARGV[2], ARGV[4], tonumber(ARGV[5]), tonumber(ARGV[7])
local freed = reclaim()
local rec = redis.call('HGET', state, owner)
if rec then
  local held, token, ticket, attempt = parse(rec)
  if (tonumber(attempt) or 0) <= tonumber(ARGV[11]) then
    redis.call('HSET', state, owner, record(held, token, ticket, ARGV[11]))
  end
  if (tonumber(redis.call('ZSCORE', deadlines, owner)) or 0) < at(ttl) then
    redis.call('ZADD', deadlines, num(at(ttl)), owner)
  end
  extend(ttl)
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
local ticket = 0
if rank then
  ticket = tonumber(redis.call('ZSCORE', queue, id))
end
if id ~= '' then
  depart(id, tonumber(ARGV[8]))
end
local token = next_number()
redis.call('HSET', state, owner, record(k, token, ticket, ARGV[11]), 'n', num(n))
redis.call('HINCRBY', state, 'used', k)
redis.call('ZADD', deadlines, num(at(ttl)), owner)
extend(ttl)
if freed then
  wake()
end
return {1, token}
