-- fifo_renew.lua: make the hold of owner last at least ttl ms from now.
-- Arguments: FIFORenewArgs (fifo.go).
-- Returns {1, ms left} when held, {-1} when the hold is gone.
--@use fifo_lib
local holder = 'h:' .. owner
if reclaim() then
  wake()
end
if not redis.call('HGET', state, holder) then
  tidy()
  return {-1}
end
local deadline = tonumber(redis.call('ZSCORE', deadlines, holder)) or 0
if deadline < at(ttl) then
  deadline = at(ttl)
  redis.call('ZADD', deadlines, num(deadline), holder)
end
extend(deadline - now)
return {1, deadline - now}
