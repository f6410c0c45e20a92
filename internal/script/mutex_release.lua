-- mutex_release.lua: end an exclusive hold and wake the first cohort in
-- line (see lock_lib.lua); with nobody in line, nobody is woken.
-- KEYS[1] lock (a string or a hash), KEYS[2] fence counter
-- Arguments: MutexReleaseArgs (lock.go): the owner token, the wake channel,
-- yield ms (0: none), used, the last token the hold's holders used (0:
-- unknown), and last, the last token of the block its grant reserved.
-- The tokens of the block that the hold did not hand on are given back
-- (see give_back_lib.lua).
-- When another cohort waited during the hold and yield is not 0, the
-- release leaves a yield marker for yield ms: the releasing cohort is
-- refused while it stands, so that the cohort that waited gets the lock
-- before the releaser's own goroutines.
-- Afterwards the owner holds nothing, whatever it found (a lock held by
-- another owner is left alone): run twice, the second run finds the work
-- done and reports it done.
-- Returns 1 (which stands for {1}: see driver.Call.Decode), costing no table.
--@use give_back_lib
-- The fast path: a hold stored as a string, which nobody contended (see
-- lock_lib.lua). redis.pcall, for GET fails on a hash; the owner is
-- compared in place (string.find, string.byte: 32 is the space after it),
-- for a string made to compare costs as much as a command.
local hold = redis.pcall('GET', KEYS[1])
if type(hold) == 'string' then
  if string.find(hold, owner, 1, true) == 1 and string.byte(hold, #owner + 1) == 32 then
    give_back(KEYS[2], used, last)
    redis.call('DEL', KEYS[1])
  end
  return 1
end
if not hold then
  return 1
end
local state = redis.call('HMGET', KEYS[1], 'o', 'qn')
if state[1] ~= owner then
  return 1
end
give_back(KEYS[2], used, last)
if not state[2] then
  -- Nobody in line (and so no yield marker to leave).
  redis.call('DEL', KEYS[1])
  return 1
end
--@use lock_lib
lock_release(KEYS[1], publish, wake, yield)
return 1
