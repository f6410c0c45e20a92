-- fifo_join.lua: put a waiter in the queue, or keep it there: its
-- heartbeat. KEYS as in fifo_lib.lua. Arguments: FIFOJoinArgs (fifo.go):
-- the waiter id, the wake channel prefix, the permits wanted, the limit n,
-- the heartbeat timeout in ms, the fence counter's margin, the waiter's
-- ticket, or 0 to draw one, and the number of an enqueue (0 for a
-- heartbeat).
-- A waiter that is not queued (new, or dropped after missing its
-- heartbeats) is queued at its ticket, so it keeps its place; a waiter queued
-- at another ticket is moved to it (the nodes of a quorum may have drawn
-- different tickets; the waiter keeps the one the quorum chose). A waiter that departed
-- (granted, or gave up; see fifo_lib.lua) is not queued again. An enqueue
-- (ticket 0) carries its number (they grow with each enqueue
-- of a waiter), which the waiter's record keeps, so that the undo of an
-- earlier enqueue, arriving late, leaves a later one's place alone (see
-- fifo_unjoin.lua); a heartbeat leaves the number as it is.
-- Returns {1, ticket, 1 if the permits fit now else 0, place from 1}. Fails
-- with "LIMIT <n>" when the name is in use with another limit.
--@use fifo_lib
local stored = limit()
if stored and stored ~= n then
  return redis.error_reply('LIMIT ' .. num(stored))
end
local id, k = waiter, permits
local changed = reclaim()
local score = tonumber(redis.call('ZSCORE', queue, id))
if not score and departed(id) then
  -- The waiter was granted or gave up: a heartbeat that arrives after that
  -- must not put it back. Its reply says "try now", which sends a waiter
  -- whose grant's reply was lost to take its hold back. An enqueue of a
  -- waiter that departed arrived after its caller moved on: it takes no
  -- place, and says so.
  if ticket == 0 then
    return {0, 0, 0, -1}
  end
  return {1, ticket, 1, 1}
end
if not score then
  if ticket > 0 then
    score = ticket
    raise_fence(ticket)
  else
    score = next_number()
  end
  redis.call('ZADD', queue, num(score), id)
  redis.call('HSET', state, 'w:' .. id, num(k) .. ' ' .. num(number), 'n', num(n))
elseif ticket == 0 and number > 0 then
  -- An enqueue sent again (its reply was lost): the place stays, under the
  -- number of this enqueue.
  redis.call('HSET', state, 'w:' .. id, num(k) .. ' ' .. num(number))
elseif ticket ~= score then
  -- The ticket the quorum chose (the largest of the nodes that decided
  -- the enqueue): a node that drew a smaller one moves the waiter up to
  -- it, one that drew a larger one (it answered after the others had
  -- decided) down, so that every node orders the waiters by the same
  -- tickets.
  score = ticket
  redis.call('ZADD', queue, num(score), id)
  raise_fence(ticket)
  changed = true
end
redis.call('ZADD', deadlines, num(at(timeout)), 'w:' .. id)
extend(timeout)
if changed then
  wake()
end
local ok, rank = fits(id, k, n)
local fit = 0
if ok then
  fit = 1
end
return {1, score, fit, rank + 1}
