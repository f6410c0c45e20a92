-- rwmutex_settle.lua: on a quorum node that did not grant it, end what a
-- write acquisition that a majority granted left there: the writer among
-- the waiting writers, and its cohort's place in the writers' line (see
-- lock_lib.lua), which becomes a departure of its call. It takes the KEYS
-- and ARGV of rwmutex_lock.lua: ARGV[2] owner, ARGV[8] '1' when the writer
-- waited, ARGV[11] cohort, ARGV[12] stale ms, ARGV[13] the call.
-- A hold of the owner there is left alone. Run twice, it does the same.
-- Returns {1}.
local owner, waits, cohort = ARGV[2], ARGV[8] == '1', ARGV[11] or ''
local stale, call = tonumber(ARGV[12]) or 3000, tonumber(ARGV[13]) or 0
if not waits then
  return {1}
end
redis.call('ZREM', KEYS[3], owner)
if cohort ~= '' and call > 0 then
  lock_depart(KEYS[1], cohort, call, stale, redis.call('HEXISTS', KEYS[1], 'f') == 1)
end
return {1}
