-- fifo_force.lua: end every hold of a fair lock or a semaphore, whoever
-- holds it, and wake the waiters the freed permits can serve, in their
-- order (redisync unlock --force). See fifo_lib.lua for KEYS.
-- Arguments: FIFOForceArgs (fifo.go): the wake channel prefix.
-- The waiters keep their places and the fence counter is left alone, so
-- that tokens keep growing; each holder's next renewal finds its hold gone
-- and reports it lost. Run twice, the second run finds nothing held and
-- says so: the effect is the same.
-- Returns {1, permits, fencing token, ...}, a pair per hold it ended, or
-- {-1} when nothing was held.
--@use fifo_lib
reclaim()
local ended = {1}
for _, member in ipairs(redis.call('ZRANGE', deadlines, 0, -1)) do
  if string.sub(member, 1, 2) == 'h:' then
    local rec = redis.call('HGET', state, member)
    local k, token, slots = 0, 0, ''
    if rec then
      k, token, _, _, slots = parse(rec)
    end
    drop_hold(member, k or 0, slots)
    table.insert(ended, k or 0)
    table.insert(ended, token or 0)
  end
end
if #ended == 1 then
  tidy()
  return {-1}
end
wake()
tidy()
return ended
