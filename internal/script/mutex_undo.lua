-- mutex_undo.lua: give back a hold that one acquisition attempt granted but
-- cannot keep (a quorum minority, an acquisition without its replica
-- acknowledgements, a grant that came back after its validity ran out).
-- It takes the KEYS and ARGV of mutex_acquire.lua and acts only while the
-- hold is the one that attempt granted: a late undo leaves alone the hold
-- that a later attempt of the same owner took or took back. The line of
-- waiting cohorts stays (see lock_lib.lua). There is no wake-up: nobody held
-- the lock through this hold, so nobody waits for its end, and on a quorum a
-- wake-up per undone minority would set every waiter racing again.
-- KEYS[1] lock hash, KEYS[2] fence counter (unused)
-- Arguments: MutexAcquireArgs (lock.go), of which it reads owner and attempt.
-- Returns {1}: nothing that attempt granted remains.
--@use lock_lib
lock_hash(KEYS[1])
if redis.call('HGET', KEYS[1], 'o') == owner and tonumber(redis.call('HGET', KEYS[1], 'a')) == attempt then
  lock_vacate(KEYS[1])
end
return {1}
