-- mutex_renew.lua: make an exclusive hold last at least ttl from now.
-- KEYS[1] lock hash
-- ARGV[1] publish command (unused), ARGV[2] owner token, ARGV[3] ttl ms
-- Returns {1, ms left} when held, {-1} when nothing was held, {-2} when
-- another owner holds the lock.
local owner = redis.call('HGET', KEYS[1], 'o')
if not owner then
  return {-1}
end
if owner ~= ARGV[2] then
  return {-2}
end
local ttl = tonumber(ARGV[3])
local left = redis.call('PTTL', KEYS[1])
if left < ttl then
  redis.call('PEXPIRE', KEYS[1], ttl)
  left = ttl
end
return {1, left}
