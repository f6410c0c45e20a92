-- give_back_lib.lua: the release's give-back of the fencing tokens that a
-- hold reserved and did not use, shared by the releases of the mutex (and
-- multi-lock) and of the rwmutex's writer.

-- give_back sets the fence counter fence back to used, the last token the
-- hold's holders used, when it still stands at last, the end of the block
-- the grant reserved: nobody drew a token since. A token is the larger of
-- the counter plus one and the server's clock, so the tokens the hold did
-- not hand on are drawn again rather than skipped, and the counter does
-- not run ahead of the tokens issued. used 0 (unknown) and used = last
-- change nothing. One command in the usual case: the counter is set, keeping its
-- expiry, and set back as it was when it did not stand at last (a lock of
-- another kind on the name drew from it) or is not there (XX: it expired).
local function give_back(fence, used, last)
  if used == 0 or used == last then
    return
  end
  local old = redis.call('SET', fence, string.format('%.0f', used), 'XX', 'KEEPTTL', 'GET')
  if old and tonumber(old) ~= last then
    redis.call('SET', fence, old, 'KEEPTTL')
  end
end
