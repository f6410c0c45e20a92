-- fifo_release.lua: give back ARGV[5] permits of hold ARGV[2] (all of them
-- when ARGV[5] is 0 or at least what it holds), drop waiter ARGV[4] if it is
-- queued, and wake the waiters that the freed permits can serve.
-- Returns {1, permits the hold keeps} when ARGV[2] held permits, {-1}
-- otherwise.
local owner, id, r = 'h:' .. ARGV[2], ARGV[4], tonumber(ARGV[5])
local changed = reclaim()
if id ~= '' and drop_waiter(id) then
  changed = true
end
local left = -1
local rec = redis.call('HGET', state, owner)
if rec then
  local k, token, ticket = parse(rec)
  if r <= 0 or r >= k then
    drop_hold(owner, k)
    left = 0
  else
    left = k - r
    redis.call('HSET', state, owner, num(left) .. ' ' .. num(token) .. ' ' .. num(ticket))
    redis.call('HINCRBY', state, 'used', -r)
  end
  changed = true
end
if changed then
  wake()
end
tidy()
if left < 0 then
  return {-1}
end
return {1, left}
