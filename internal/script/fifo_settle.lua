-- fifo_settle.lua: on a quorum node that did not grant it, end what an
-- acquisition that a majority granted left there: the caller's place in
-- the queue, which becomes a departure (see fifo_lib.lua), and wake the
-- waiters the room it leaves can serve. It takes the KEYS and ARGV of
-- fifo_acquire.lua: ARGV[4] the waiter id, ARGV[8] heartbeat timeout ms.
-- A hold of the owner there is left alone. Run twice, it does the same,
-- waking nobody.
-- Returns {1}.
local id = ARGV[4]
if id == '' then
  return {1}
end
local changed = reclaim()
if depart(id, tonumber(ARGV[8])) then
  changed = true
end
if changed then
  wake()
end
tidy()
return {1}
