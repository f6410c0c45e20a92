-- fifo_renew.lua: make the hold of owner last at least ttl ms from now.
-- Arguments: FIFORenewArgs (fifo.go).
-- Returns {1, ms left} when held, with the hold's slots after them when it
-- has any (see fifo_lib.lua: a quorum renews a hold where its nodes agree
-- on its slots), {-1} when the hold is gone.
--@use fifo_lib
local holder = 'h:' .. owner
if reclaim() then
  wake()
end
local rec = redis.call('HGET', state, holder)
if not rec then
  tidy()
  return {-1}
end
local deadline = tonumber(redis.call('ZSCORE', deadlines, holder)) or 0
if deadline < at(ttl) then
  deadline = at(ttl)
  redis.call('ZADD', deadlines, num(deadline), holder)
end
extend(deadline - now)
local _, _, _, _, slots = parse(rec)
if slots ~= '' then
  return {1, deadline - now, 's' .. slots}
end
return {1, deadline - now}
