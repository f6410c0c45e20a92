-- mutex_release.lua: end an exclusive hold and wake the first cohort in
-- line (see lock_lib.lua); with nobody in line, nobody is woken.
-- KEYS[1] lock (a string or a hash), KEYS[2] fence counter
-- Arguments: MutexReleaseArgs (lock.go): the owner token, yield ms (0:
-- none), used, the last token the hold's holders used (0: unknown, or no
-- tokens to give back), and last, the last token of the block its grant
-- reserved. The wake channels are under "<base>wake" for KEYS[1]
-- "<base>lock" (see keyspace.Space.MutexLine).
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
-- The fast path: a hold stored as a string, which nobody contended (see
-- lock_lib.lua), with no tokens to give back. redis.pcall, for GET fails
-- on a hash; the owner is compared in place (string.find, string.byte: 32
-- is the space after it), for a string made to compare costs as much as a
-- command. It defines no function (a Lua closure is made at every run).
local hold = redis.pcall('GET', KEYS[1])
if not hold then
  return 1
end
local state
if type(hold) == 'string' then
  if string.find(hold, owner, 1, true) ~= 1 or string.byte(hold, #owner + 1) ~= 32 then
    return 1
  end
  if used == 0 then
    redis.call('DEL', KEYS[1])
    return 1
  end
else
  state = redis.call('HMGET', KEYS[1], 'o', 'qn')
  if state[1] ~= owner then
    return 1
  end
end
--@use give_back_lib
give_back(KEYS[2], used, last)
if not state or not state[2] then
  -- Nobody in line (and so no yield marker to leave).
  redis.call('DEL', KEYS[1])
  return 1
end
--@use lock_lib
lock_release(KEYS[1], publish, string.sub(KEYS[1], 1, -5) .. 'wake', yield)
return 1
