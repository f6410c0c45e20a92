-- mutex_undo.lua: give back a hold that an acquisition took but cannot keep
-- (a quorum minority, an acquisition without its replica acknowledgements).
-- It is mutex_release.lua without the wake-up: nobody else held the lock
-- through this hold, so nobody waits for its end, and on a quorum a wake-up
-- per undone minority would set every waiter racing again.
-- KEYS[1] lock hash, KEYS[2] fence counter (unused); ARGV[2] owner token
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
return {1}
