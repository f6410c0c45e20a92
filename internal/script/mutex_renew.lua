-- mutex_renew.lua: make an exclusive hold last at least ttl from now.
-- KEYS[1] lock (a string or a hash)
-- Arguments: RenewArgs (lock.go): the owner token and the ttl in ms.
-- Returns {1, ms left} when held, {-1} when nothing was held, {-2} when
-- another owner holds the lock.
-- A hold is a string "<owner> <token> <cohort>" or a hash (see
-- lock_lib.lua); the rwmutex's read holds and the reentrant lock's have
-- scripts of their own.
--@use holder_lib
local holder = lock_holder(KEYS[1])
if not holder then
  return {-1}
end
if holder ~= owner then
  return {-2}
end
local left = redis.call('PTTL', KEYS[1])
if left < ttl then
  redis.call('PEXPIRE', KEYS[1], ttl)
  left = ttl
end
return {1, left}
