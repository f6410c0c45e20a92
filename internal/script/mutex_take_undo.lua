-- mutex_take_undo.lua: give back a hold that mutex_take.lua granted but
-- that its caller cannot keep (see mutex_undo.lua, which this is for that
-- script). It acts only while the hold is that grant's: this owner's
-- string, or the lock hash that a waiter made of it, which records attempt
-- 1 (a later attempt of the same owner that took the hold back records
-- its own). The line stays, and nobody is woken.
-- KEYS[1] lock (a string or a hash), KEYS[2] fence counter (unused)
-- Arguments: MutexTakeArgs (lock.go), of which it reads owner.
-- Returns 1: nothing that the grant took remains.
local hold = redis.pcall('GET', KEYS[1])
if type(hold) == 'string' then
  if string.find(hold, owner, 1, true) == 1 and string.byte(hold, #owner + 1) == 32 then
    redis.call('DEL', KEYS[1])
  end
  return 1
end
if not hold then
  return 1
end
--@use lock_lib
if redis.call('HGET', KEYS[1], 'o') == owner and tonumber(redis.call('HGET', KEYS[1], 'a')) == 1 then
  lock_vacate(KEYS[1])
end
return 1
