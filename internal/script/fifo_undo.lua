-- fifo_undo.lua: give back what one fifo_acquire.lua call took: the hold, and
-- the caller's place in the queue at its old ticket. KEYS and ARGV as
-- fifo_acquire.lua; ARGV[8] heartbeat timeout ms.
-- Returns {1} when undone, {-1} when ARGV[2] held nothing here.
local owner, id = 'h:' .. ARGV[2], ARGV[4]
local rec = redis.call('HGET', state, owner)
if not rec then
  return {-1}
end
local k, _, ticket = parse(rec)
drop_hold(owner, k)
if ticket > 0 and id ~= '' then
  local timeout = tonumber(ARGV[8])
  redis.call('ZADD', queue, num(ticket), id)
  redis.call('HSET', state, 'w:' .. id, num(k))
  redis.call('ZADD', deadlines, num(at(timeout)), 'w:' .. id)
  extend(timeout)
end
reclaim()
wake()
tidy()
return {1}
