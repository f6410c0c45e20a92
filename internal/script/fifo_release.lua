-- fifo_release.lua: make hold ARGV[2] keep ARGV[5] permits (none: end it;
-- a hold that has that many or fewer is left as it is), drop waiter ARGV[4]
-- if it is queued (it departs: see fifo_lib.lua), and wake the waiters that
-- the freed permits can serve.
-- The call states what remains rather than what to give back, so that run
-- twice it gives back no more than once, and a late partial release never
-- gives back what a later one kept.
-- Returns {1, permits the hold keeps} when that is what remains (0, when
-- nothing should, whatever the release found), {-1} when the hold should
-- keep permits but is gone.
local owner, id, keep = 'h:' .. ARGV[2], ARGV[4], tonumber(ARGV[5])
local changed = reclaim()
if id ~= '' and depart(id, tonumber(ARGV[8])) then
  changed = true
end
local left = 0
local rec = redis.call('HGET', state, owner)
if rec then
  local k, token, ticket, attempt = parse(rec)
  if keep <= 0 then
    drop_hold(owner, k)
    changed = true
  elseif keep < k then
    redis.call('HSET', state, owner, record(keep, token, ticket, attempt))
    redis.call('HINCRBY', state, 'used', keep - k)
    changed = true
    left = keep
  else
    left = k
  end
elseif keep > 0 then
  left = -1
end
if changed then
  wake()
end
tidy()
if left < 0 then
  return {-1}
end
return {1, left}
