-- fifo_undo.lua: give back what one fifo_acquire.lua call took: the hold, and
-- the caller's place in the queue at its old ticket. KEYS and ARGV as
-- fifo_acquire.lua; ARGV[8] heartbeat timeout ms, ARGV[11] the attempt.
-- It acts only while the hold is the one that attempt granted: a late undo
-- leaves alone the hold that a later attempt of the same owner took or took
-- back. The waiters the permits it gave back can serve are woken, but not
-- the caller itself, which tries again on its own: on a quorum, whose undo
-- gives back a minority's grant, waking the caller would set it trying in a
-- loop while the majority's holder keeps the permits.
-- Returns {1}: nothing that attempt granted remains.
local owner, id = 'h:' .. ARGV[2], ARGV[4]
local rec = redis.call('HGET', state, owner)
if not rec then
  return {1}
end
local k, _, ticket, attempt = parse(rec)
if attempt ~= ARGV[11] then
  return {1}
end
drop_hold(owner, k)
if id ~= '' then
  -- The grant is undone: the waiter goes on waiting.
  redis.call('ZREM', deadlines, 'x:' .. id)
end
if ticket > 0 and id ~= '' then
  local timeout = tonumber(ARGV[8])
  redis.call('ZADD', queue, num(ticket), id)
  redis.call('HSET', state, 'w:' .. id, num(k))
  redis.call('ZADD', deadlines, num(at(timeout)), 'w:' .. id)
  extend(timeout)
end
reclaim()
wake(id)
tidy()
return {1}
