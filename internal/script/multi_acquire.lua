-- multi_acquire.lua: take the exclusive holds of several mutexes at once,
-- all or none. The holds are ordinary mutex holds (see lock_lib.lua).
-- KEYS[2i-1] lock hash of member i, KEYS[2i] its fence counter
-- ARGV[1] publish command (unused), ARGV[2] owner token, ARGV[3] wake channel
-- of the first member (unused), ARGV[4] ttl ms, ARGV[5] fence counter margin ms (see mutex_acquire.lua),
-- ARGV[6] holder description (unused: the cohort starts with it), ARGV[7] attempt number (they grow with each
-- attempt of an owner), ARGV[8] the caller's cohort, ARGV[9] how long, in
-- ms, a waiting caller's place in line outlives this attempt (0 when the
-- caller does not wait), ARGV[10] the number of the caller's acquisition
-- call in its cohort (see lock_lib.lua), ARGV[11..] wake channels of every
-- member
-- A waiting caller that finds a member taken takes a place in that member's
-- line for its cohort (or keeps the one it has), so that the member's
-- release wakes it in turn. A call that has been overtaken on a member (its
-- cohort gave up on it) neither joins a line nor takes the locks: its
-- request arrived after its caller moved on.
-- A member that ARGV[2] holds already (a retried attempt whose first reply
-- was lost, or the same request run twice) is held again with its token,
-- an expiry at least that of a new grant and ARGV[7] as the attempt that granted it
-- (unless a later attempt is recorded already).
-- Returns {1, token of member 1, ..., token of member n} when all were free
-- or held by ARGV[2], {0, ms until the blocking hold expires, index of the
-- first member held by another owner} otherwise.
local n = #KEYS / 2
local cohort = ARGV[8] or ''
local stale = tonumber(ARGV[9]) or 0
local call = tonumber(ARGV[10]) or 0
for i = 1, n do
  local lock = KEYS[2 * i - 1]
  if lock_stale(lock, cohort, call) then
    return {0, 1, i}
  end
  local owner = redis.call('HGET', lock, 'o')
  if owner and owner ~= ARGV[2] then
    if stale > 0 then
      lock_wait(lock, cohort, call, stale, true)
    end
    return {0, redis.call('PTTL', lock), i}
  end
end
local out = {1}
for i = 1, n do
  local lock, fence = KEYS[2 * i - 1], KEYS[2 * i]
  if redis.call('HGET', lock, 'o') == ARGV[2] then
    if (tonumber(redis.call('HGET', lock, 'a')) or 0) <= tonumber(ARGV[7]) then
      redis.call('HSET', lock, 'a', ARGV[7])
    end
    if redis.call('PTTL', lock) < tonumber(ARGV[4]) then
      redis.call('PEXPIRE', lock, ARGV[4])
    end
    out[i + 1] = tonumber(redis.call('HGET', lock, 'f'))
  else
    local token = math.max((tonumber(redis.call('GET', fence)) or 0) + 1, lock_us())
    -- The counter expires ARGV[5] ms after the clock passes it (see
    -- mutex_acquire.lua).
    redis.call('SET', fence, lock_num(token), 'PX', math.max(math.ceil((token - lock_us()) / 1000), 0) + tonumber(ARGV[5]))
    -- A release's yield marker does not refuse a multi-lock.
    lock_grant(lock, ARGV[2], token, ARGV[7], cohort, call, math.max(stale, 1), ARGV[4])
    out[i + 1] = token
  end
end
return out
