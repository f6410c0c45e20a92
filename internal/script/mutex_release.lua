-- mutex_release.lua: end an exclusive hold and wake one waiter per process.
-- KEYS[1] lock hash, KEYS[2] fence counter (unused; the KEYS of mutex_acquire)
-- ARGV[1] publish command, ARGV[2] owner token, ARGV[3] wake channel
-- Returns {1} when released, {-1} when nothing was held, {-2} when another
-- owner holds the lock (it is left alone).
local owner = redis.call('HGET', KEYS[1], 'o')
if not owner then
  return {-1}
end
if owner ~= ARGV[2] then
  return {-2}
end
redis.call('DEL', KEYS[1])
redis.call(ARGV[1], ARGV[3], 'u')
return {1}
