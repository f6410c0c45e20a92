-- mutex_acquire.lua: take an exclusive hold.
-- KEYS[1] lock hash {o = owner token, f = fencing token, h = holder
--         description, a = the attempt that last granted the hold, c = the
--         holder's cohort, w = set when another cohort waited}, or, for a
--         few milliseconds after a release, {y = the cohort that yields}
-- KEYS[2] fence counter
-- ARGV[1] publish command (unused), ARGV[2] owner token, ARGV[3] wake channel (unused),
-- ARGV[4] ttl ms, ARGV[5] fence counter ttl ms, ARGV[6] holder description (host/pid, for status),
-- ARGV[7] attempt number (they grow with each attempt of an owner),
-- ARGV[8] how many fencing tokens to reserve for the hold (default 1): the
-- first is its own, the others are for the holders it is passed to inside
-- its process, ARGV[9] the caller's cohort (the goroutines of its process
-- that queue for the name on its backend), ARGV[10] '1' when the caller
-- waits for the lock (Lock), '0' when it does not (TryLock)
-- A waiting caller that finds the lock held by another cohort marks it (w),
-- so that the release lets the waiting cohorts in before its own (see
-- mutex_release.lua): while the release's yield marker stands, the cohort
-- that yields is refused and every other is granted.
-- An owner that holds the lock already (a retried attempt whose first reply
-- was lost, or the same request run twice) gets its hold back with its
-- token, the expiry of a new grant and ARGV[7] as the attempt that granted
-- it, so that the undo of an earlier attempt leaves it alone. The recorded
-- attempt never goes back: an earlier attempt that arrives late changes it
-- not.
-- Returns {1, fencing token, last token of the block} when held, {0, ms
-- until the holder's hold (or the yield) expires} otherwise.
local block = tonumber(ARGV[8]) or 1
local cohort = ARGV[9] or ''
local owner = redis.call('HGET', KEYS[1], 'o')
if owner == ARGV[2] then
  if (tonumber(redis.call('HGET', KEYS[1], 'a')) or 0) <= tonumber(ARGV[7]) then
    redis.call('HSET', KEYS[1], 'a', ARGV[7])
  end
  redis.call('PEXPIRE', KEYS[1], ARGV[4])
  local f = tonumber(redis.call('HGET', KEYS[1], 'f'))
  return {1, f, f + block - 1}
end
if owner then
  if ARGV[10] == '1' and redis.call('HGET', KEYS[1], 'c') ~= cohort then
    redis.call('HSET', KEYS[1], 'w', '1')
  end
  return {0, redis.call('PTTL', KEYS[1])}
end
local yields = redis.call('HGET', KEYS[1], 'y')
if yields then
  if yields == cohort then
    return {0, redis.call('PTTL', KEYS[1])}
  end
  redis.call('DEL', KEYS[1])
end
-- The token is the larger of the counter plus one and the server clock in
-- microseconds, so that it still grows when the counter expired or went back
-- with a failover that lost its last writes.
local t = redis.call('TIME')
local token = math.max((tonumber(redis.call('GET', KEYS[2])) or 0) + 1, t[1] * 1000000 + t[2])
local s = string.format('%.0f', token)
redis.call('SET', KEYS[2], string.format('%.0f', token + block - 1), 'PX', ARGV[5])
redis.call('HSET', KEYS[1], 'o', ARGV[2], 'f', s, 'h', ARGV[6], 'a', ARGV[7], 'c', cohort)
redis.call('PEXPIRE', KEYS[1], ARGV[4])
return {1, token, token + block - 1}
