-- fifo_unjoin.lua: the undo of an enqueue (fifo_join.lua with ticket 0)
-- that a quorum's majority did not grant: take the waiter out of the queue
-- on this node, if the enqueue that last queued it is this one (ARGV[11]),
-- so that the undo of an earlier enqueue, arriving late, leaves a later
-- enqueue's place alone. It takes the KEYS and ARGV of the enqueue
-- (ARGV[2] the waiter id). The waiter goes on waiting and enqueues again:
-- no departure is recorded. The waiters the freed place lets in are woken.
-- Run twice, the second run finds nothing to do.
-- Returns {1}.
local id = ARGV[2]
local rec = redis.call('HGET', state, 'w:' .. id)
local number = rec and string.match(rec, '^%d+ (%d+)$')
local changed = reclaim()
if number and number == ARGV[11] and drop_waiter(id) then
  changed = true
end
if changed then
  wake()
end
tidy()
return {1}
