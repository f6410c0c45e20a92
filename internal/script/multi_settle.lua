-- multi_settle.lua: on a quorum node that did not grant it, end what a
-- multi-lock acquisition that a majority granted left there: the caller's
-- place in the line of each member it waited for (see lock_lib.lua), which
-- becomes a departure of its call. It takes the KEYS and arguments of
-- multi_acquire.lua (MultiArgs), of which it reads attempt (the one
-- granted: the departures are those of that attempt, see lock_depart),
-- cohort, stale (0: the caller did not wait) and call. Holds of the owner are left alone. Run
-- twice, it does the same.
-- Returns {1}.
if stale <= 0 or cohort == '' or call == 0 then
  return {1}
end
--@use lock_lib
for i = 1, #KEYS / 2 do
  local lock = KEYS[2 * i - 1]
  lock_hash(lock)
  if lock_departs(lock, cohort, attempt) then
    lock_depart(lock, cohort, call, stale, redis.call('HEXISTS', lock, 'f') == 1, attempt)
  end
end
return {1}
