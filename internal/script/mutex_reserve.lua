-- mutex_reserve.lua: reserve a new block of fencing tokens for a hold that
-- its process hands on to a goroutine that began to wait after the hold's
-- block was sent for (see lease.Tenure.Serves): the block's tokens are
-- above every token issued before this call, of any kind of the name, so
-- they may go to that goroutine, and the hold passes on without a release
-- and an acquisition through Redis.
-- KEYS[1] lock (a string or a hash, see lock_lib.lua), KEYS[2] fence counter
-- Arguments: MutexReserveArgs (lock.go): the owner token, used and last (the
-- last token the hold's holders used, and the last of the block it had:
-- the rest of that block is given back first, as a release gives it back,
-- see give_back_lib.lua, so that the counter does not run ahead of the
-- clock by the tokens that no holder used), block (how many tokens to
-- reserve), fence_margin and clock (see draw_lib.lua: on a quorum, the
-- caller's clock).
-- Run twice, the second run reserves another block above the first: the
-- caller uses the one whose reply it got, and the other is only skipped.
-- Returns {1, first token, last token} while owner holds the lock, {-1}
-- otherwise.
--@use holder_lib
if lock_holder(KEYS[1]) ~= owner then
  return {-1}
end
--@use give_back_lib
give_back(KEYS[2], used, last)
--@use draw_lib
return {1, token, last}
