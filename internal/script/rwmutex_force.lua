-- rwmutex_force.lua: end the write hold and every read hold of a
-- readers/writer lock, and wake every waiter (redisync unlock --force).
-- KEYS[1] writer hash, KEYS[2] readers (see rwmutex_lock.lua)
-- Arguments: RWForceArgs (rwmutex.go): the writers' wake channel (the writers
-- of the cohort first in line are woken, see rwmutex_unlock.lua) and the
-- readers' wake channel
-- The waiting writers and readers keep their places, and the readers' turn
-- its expiry: they are not holds. The fence counter is left alone, so that
-- tokens keep growing. The write holder's process is told on its own wake
-- channel ('x', see mutex_force.lua); each holder's next renewal finds its
-- hold gone and reports it lost. Run twice, the second run finds nothing held and says
-- so: the effect is the same.
-- Returns {1, fencing token of the write hold (0: none), read holds ended}
-- when it ended a hold, {-1} when nothing was held.
--@use lock_lib
local t = redis.call('TIME')
local now = t[1] * 1000 + math.floor(t[2] / 1000)
local writer = redis.call('HGET', KEYS[1], 'o')
local token, cohort = 0, redis.call('HGET', KEYS[1], 'c')
if writer then
  token = tonumber(redis.call('HGET', KEYS[1], 'f')) or 0
end
-- The writers' line stays (see lock_lib.lua).
local line = lock_vacate(KEYS[1])
local readers = #redis.call('ZRANGEBYSCORE', KEYS[2], '(' .. now, '+inf')
redis.call('DEL', KEYS[2])
if not writer and readers == 0 then
  return {-1}
end
if #line > 0 then
  redis.call(publish, wwake .. ':' .. line[1][1], 'w')
end
if writer and cohort then
  redis.call(publish, wwake .. ':' .. cohort, 'x')
end
redis.call(publish, rwake, 'w')
return {1, token, readers}
