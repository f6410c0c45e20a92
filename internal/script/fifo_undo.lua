-- fifo_undo.lua: give back what one fifo_acquire.lua call took: the hold, and
-- the caller's place in the queue at its old ticket. KEYS and arguments as
-- fifo_acquire.lua (FIFOAcquireArgs, fifo.go), of which it reads the owner,
-- the waiter id, the heartbeat timeout and the attempt.
-- It acts only while the hold is the one that attempt granted: a late undo
-- leaves alone the hold that a later attempt of the same owner took or took
-- back. The waiters the permits it gave back can serve are woken, but not
-- the caller itself, which tries again on its own: on a quorum, whose undo
-- gives back a minority's grant, waking the caller would set it trying in a
-- loop while the majority's holder keeps the permits.
-- Returns {1}: nothing that attempt granted remains.
--@use fifo_lib
local holder, id = 'h:' .. owner, waiter
local rec = redis.call('HGET', state, holder)
if not rec then
  return {1}
end
local k, _, ticket, granted, slots = parse(rec)
if tonumber(granted) ~= attempt then
  return {1}
end
drop_hold(holder, k, slots)
if id ~= '' then
  -- The grant is undone: the waiter goes on waiting.
  redis.call('ZREM', deadlines, 'x:' .. id)
end
if ticket > 0 and id ~= '' then
  redis.call('ZADD', queue, num(ticket), id)
  redis.call('HSET', state, 'w:' .. id, num(k))
  redis.call('ZADD', deadlines, num(at(timeout)), 'w:' .. id)
  extend(timeout)
end
reclaim()
wake(id)
tidy()
return {1}
