-- fifo_settle.lua: on a quorum node that did not grant it, end what an
-- acquisition that a majority granted left there: the caller's place in
-- the queue, which becomes a departure (see fifo_lib.lua). It takes the
-- KEYS and arguments of fifo_acquire.lua (FIFOAcquireArgs, fifo.go), of
-- which it reads the waiter id and the heartbeat timeout. Nobody is woken: the waiters behind it may fit on
-- this node now, but not on the majority, where the caller holds its
-- permits; its release wakes them on every node. A hold of the owner there
-- is left alone. Run twice, it does the same.
-- Returns {1}.
--@use fifo_lib
local id = waiter
if id == '' then
  return {1}
end
if reclaim() then
  wake()
end
depart(id, timeout)
tidy()
return {1}
