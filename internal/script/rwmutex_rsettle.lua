-- rwmutex_rsettle.lua: on a quorum node that did not grant it, end what a
-- read acquisition that a majority granted left there: the reader among
-- the waiting readers and in the readers' turn. It records the departure of
-- the attempt granted, 'x:<owner>:<attempt>' among the waiting readers for
-- ttl ms (see rwmutex_rlock.lua): a copy of that attempt delivered here
-- late neither waits nor takes a hold, while a later attempt of the owner
-- (its caller trying again after giving the grant back) is not refused.
-- It takes the KEYS and arguments of rwmutex_rlock.lua (RWRLockArgs), of
-- which it reads owner (the RLock call), ttl and attempt. Read holds of the
-- owner there are left alone. Run twice, it does the same.
-- Returns {1}.
local t = redis.call('TIME')
local now = t[1] * 1000 + math.floor(t[2] / 1000)
redis.call('ZREM', KEYS[4], owner)
redis.call('ZREM', KEYS[5], owner)
redis.call('ZADD', KEYS[4], now + ttl, 'x:' .. owner .. ':' .. attempt)
if redis.call('PTTL', KEYS[4]) < ttl then
  redis.call('PEXPIRE', KEYS[4], ttl)
end
return {1}
