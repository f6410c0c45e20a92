-- fifo_renew.lua: make hold ARGV[2] last at least ARGV[7] ms from now.
-- Returns {1, ms left} when held, {-1} when the hold is gone.
local owner, ttl = 'h:' .. ARGV[2], tonumber(ARGV[7])
if reclaim() then
  wake()
end
if not redis.call('HGET', state, owner) then
  tidy()
  return {-1}
end
local deadline = tonumber(redis.call('ZSCORE', deadlines, owner)) or 0
if deadline < at(ttl) then
  deadline = at(ttl)
  redis.call('ZADD', deadlines, num(deadline), owner)
end
extend(deadline - now)
return {1, deadline - now}
