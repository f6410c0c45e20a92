-- rwmutex_rsettle.lua: on a quorum node that did not grant it, end what a
-- read acquisition that a majority granted left there: the reader among
-- the waiting readers and in the readers' turn. It takes the KEYS and
-- arguments of rwmutex_rlock.lua (RWRLockArgs), of which it reads the owner
-- (the RLock call). Read holds of
-- the owner there are left alone. Run twice, it does the same.
-- Returns {1}.
redis.call('ZREM', KEYS[4], owner)
redis.call('ZREM', KEYS[5], owner)
return {1}
