-- fifo_settle.lua: on a quorum node that did not grant it, end what an
-- acquisition that a majority granted left there: the caller's place in
-- the queue, which becomes a departure (see fifo_lib.lua). It takes the
-- KEYS and ARGV of fifo_acquire.lua: ARGV[4] the waiter id, ARGV[8]
-- heartbeat timeout ms. Nobody is woken: the waiters behind it may fit on
-- this node now, but not on the majority, where the caller holds its
-- permits; its release wakes them on every node. A hold of the owner there
-- is left alone. Run twice, it does the same.
-- Returns {1}.
local id = ARGV[4]
if id == '' then
  return {1}
end
if reclaim() then
  wake()
end
depart(id, tonumber(ARGV[8]))
tidy()
return {1}
