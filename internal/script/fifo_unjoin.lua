-- fifo_unjoin.lua: the undo of an enqueue (fifo_join.lua with ticket 0)
-- that a quorum's majority did not grant: take the waiter out of the queue
-- on this node, if the enqueue that last queued it is this one (number),
-- so that the undo of an earlier enqueue, arriving late, leaves a later
-- enqueue's place alone. It takes the KEYS and arguments of the enqueue
-- (FIFOJoinArgs, fifo.go), of which it reads the waiter id and number. The waiter goes on waiting and enqueues again:
-- no departure is recorded. The waiters the freed place lets in are woken.
-- Run twice, the second run finds nothing to do.
-- Returns {1}.
--@use fifo_lib
local id = waiter
local rec = redis.call('HGET', state, 'w:' .. id)
local queued = rec and string.match(rec, '^%d+ (%d+)$')
local changed = reclaim()
if queued and tonumber(queued) == number and drop_waiter(id) then
  changed = true
end
if changed then
  wake()
end
tidy()
return {1}
