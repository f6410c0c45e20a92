-- fifo_release.lua: make the hold of owner keep keep permits (none: end
-- it; a hold that has that many or fewer is left as it is), drop the
-- waiter (unless '') if it is queued (it departs: see fifo_lib.lua), and wake the waiters that
-- the freed permits can serve.
-- Arguments: FIFOReleaseArgs (fifo.go): the owner token, the wake channel
-- prefix, the waiter id, keep, and the heartbeat timeout in ms (how long
-- the departure stands).
-- The call states what remains rather than what to give back, so that run
-- twice it gives back no more than once, and a late partial release never
-- gives back what a later one kept.
-- Returns {1, permits the hold keeps} when that is what remains (0, when
-- nothing should, whatever the release found), {-1} when the hold should
-- keep permits but is gone.
--@use fifo_lib
local holder, id = 'h:' .. owner, waiter
local changed = reclaim()
if id ~= '' and depart(id, timeout) then
  changed = true
end
local left = 0
local rec = redis.call('HGET', state, holder)
if rec then
  local k, token, ticket, attempt, slots = parse(rec)
  if keep <= 0 then
    drop_hold(holder, k, slots)
    changed = true
  elseif keep < k then
    -- The hold keeps its first slots (see fifo_lib.lua).
    local kept = slots_keep(slots, keep)
    slots_set(slots, '0')
    slots_set(kept, '1')
    redis.call('HSET', state, holder, record(keep, token, ticket, attempt, kept))
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
