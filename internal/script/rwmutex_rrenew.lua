-- rwmutex_rrenew.lua: make a read hold last at least ttl from now.
-- KEYS[1] readers (sorted set scored by expiry, server ms)
-- Arguments: RenewArgs (lock.go), whose owner is the hold's member
-- ('<owner>:<attempt>', see rwmutex_rlock.lua), and the ttl in ms
-- Returns {1, ms left} when held, {-1} when the hold was released or expired.
local t = redis.call('TIME')
local now = t[1] * 1000 + math.floor(t[2] / 1000)
local score = tonumber(redis.call('ZSCORE', KEYS[1], owner))
if not score or score <= now then
  return {-1}
end
local expiry = math.max(score, now + ttl)
redis.call('ZADD', KEYS[1], expiry, owner)
if redis.call('PTTL', KEYS[1]) < expiry - now then
  redis.call('PEXPIRE', KEYS[1], expiry - now)
end
return {1, expiry - now}
