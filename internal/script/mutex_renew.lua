-- mutex_renew.lua: make an exclusive hold last at least ttl from now.
-- KEYS[1] lock hash
-- Arguments: RenewArgs (lock.go): the owner token and the ttl in ms.
-- Returns {1, ms left} when held, {-1} when nothing was held, {-2} when
-- another owner holds the lock.
local holder = redis.call('HGET', KEYS[1], 'o')
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
