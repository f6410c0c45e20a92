-- mutex_release.lua: end an exclusive hold and wake the first cohort in
-- line (see lock_lib.lua); with nobody in line, nobody is woken.
-- KEYS[1] lock hash, KEYS[2] fence counter
-- ARGV[1] publish command, ARGV[2] owner token, ARGV[3] wake channel,
-- ARGV[4] yield ms (default 0), ARGV[5] the last token the hold's holders
-- used (0: unknown), ARGV[6] the last token of the block its grant reserved
-- When the fence counter still stands at the end of the block (nobody drew
-- a token since), it goes back to the last token used: the tokens the hold
-- did not hand on are given back, so that the counter does not run ahead
-- of the tokens issued (see mutex_acquire.lua: a token is the larger of the
-- counter plus one and the server's clock).
-- When another cohort waited during the hold and ARGV[4] is not 0, the
-- release leaves a yield marker for ARGV[4] ms: the releasing cohort is
-- refused while it stands, so that the cohort that waited gets the lock
-- before the releaser's own goroutines.
-- Afterwards the owner holds nothing, whatever it found (a lock held by
-- another owner is left alone): run twice, the second run finds the work
-- done and reports it done.
-- Returns {1}.
local state = redis.call('HMGET', KEYS[1], 'o', 'qn')
if state[1] ~= ARGV[2] then
  return {1}
end
local used, last = tonumber(ARGV[5]) or 0, ARGV[6]
if used > 0 and last and last ~= ARGV[5] and redis.call('GET', KEYS[2]) == last then
  redis.call('SET', KEYS[2], ARGV[5], 'KEEPTTL')
end
if not state[2] then
  -- The fast path: nobody in line (and so no yield marker to leave).
  redis.call('DEL', KEYS[1])
  return {1}
end
--@lock_lib
lock_release(KEYS[1], ARGV[1], ARGV[3], tonumber(ARGV[4]) or 0)
return {1}
