-- multi_release.lua: end the holds that an owner has among several mutexes,
-- waking each released mutex's waiters. It takes the KEYS and ARGV of
-- multi_acquire.lua, and undoes it.
-- KEYS[2i-1] lock hash of member i, KEYS[2i] its fence counter (unused)
-- ARGV[1] publish command, ARGV[2] owner token, ARGV[7..] wake channels
-- Returns {1, holds released} when at least one was, {-1} when none was held
-- by ARGV[2].
local released = 0
for i = 1, #KEYS / 2 do
  local lock = KEYS[2 * i - 1]
  if redis.call('HGET', lock, 'o') == ARGV[2] then
    redis.call('DEL', lock)
    redis.call(ARGV[1], ARGV[6 + i], 'u')
    released = released + 1
  end
end
if released == 0 then
  return {-1}
end
return {1, released}
