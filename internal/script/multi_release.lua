-- multi_release.lua: end the holds that an owner has among several mutexes,
-- waking the first cohort in each released mutex's line (multi.release), or
-- give back those that one attempt of multi_acquire.lua granted, without a
-- wake-up (multi.undo). The two scripts are this source with its variant
-- release true for the former, false for the latter. Both take the KEYS
-- and arguments of multi_acquire.lua (MultiArgs, multi.go; see
-- lock_lib.lua for the lock hash), of which they read owner, attempt (for
-- an undo: a late undo leaves alone the holds a later attempt of the same
-- owner took or took back) and wakes.
-- KEYS[2i-1] lock hash of member i, KEYS[2i] its fence counter (unused)
-- Afterwards the owner holds nothing (after an undo: nothing that attempt
-- granted), whatever it found: run twice, the second run finds the work
-- done and reports it done.
-- Returns {1}.
--@variant release
--@use lock_lib
for i = 1, #KEYS / 2 do
  local lock = KEYS[2 * i - 1]
  lock_hash(lock)
  if redis.call('HGET', lock, 'o') == owner and (release or tonumber(redis.call('HGET', lock, 'a')) == attempt) then
    if release then
      lock_release(lock, publish, wakes[i], 0)
    else
      lock_vacate(lock)
    end
  end
end
return {1}
