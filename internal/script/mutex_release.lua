-- mutex_release.lua: end an exclusive hold and wake one waiter per process.
-- KEYS[1] lock hash, KEYS[2] fence counter (unused; the KEYS of mutex_acquire)
-- ARGV[1] publish command, ARGV[2] owner token, ARGV[3] wake channel
-- Afterwards the owner holds nothing, whatever it found (a lock held by
-- another owner is left alone): run twice, the second run finds the work
-- done and reports it done.
-- Returns {1}.
if redis.call('HGET', KEYS[1], 'o') == ARGV[2] then
  redis.call('DEL', KEYS[1])
  redis.call(ARGV[1], ARGV[3], 'u')
end
return {1}
