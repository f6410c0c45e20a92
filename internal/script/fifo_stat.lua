-- fifo_stat.lua: read the state without changing it.
-- Returns {1, live waiters, permits out in live holds, limit (0: unused)}.
--@use fifo_lib
local waiting, out = redis.call('ZCARD', queue), used()
for _, member in ipairs(redis.call('ZRANGEBYSCORE', deadlines, '-inf', '(' .. num(now), 'LIMIT', 0, 1024)) do
  if string.sub(member, 1, 2) == 'h:' then
    local rec = redis.call('HGET', state, member)
    if rec then
      out = out - parse(rec)
    end
  elseif redis.call('ZSCORE', queue, string.sub(member, 3)) then
    waiting = waiting - 1
  end
end
return {1, math.max(waiting, 0), math.max(out, 0), limit() or 0}
