-- multi_acquire.lua: take the exclusive holds of several mutexes at once,
-- all or none. The holds are ordinary mutex holds (see mutex_acquire.lua).
-- KEYS[2i-1] lock hash of member i, KEYS[2i] its fence counter
-- ARGV[1] publish command (unused), ARGV[2] owner token, ARGV[3] wake channel
-- of the first member (unused), ARGV[4] ttl ms, ARGV[5] fence counter ttl ms,
-- ARGV[6] holder description, ARGV[7] attempt number (they grow with each
-- attempt of an owner), ARGV[8..] wake channels of every member
-- A member that ARGV[2] holds already (a retried attempt whose first reply
-- was lost, or the same request run twice) is held again with its token,
-- the expiry of a new grant and ARGV[7] as the attempt that granted it
-- (unless a later attempt is recorded already).
-- Returns {1, token of member 1, ..., token of member n} when all were free
-- or held by ARGV[2], {0, ms until the blocking hold expires, index of the
-- first member held by another owner} otherwise.
local n = #KEYS / 2
for i = 1, n do
  local owner = redis.call('HGET', KEYS[2 * i - 1], 'o')
  if owner and owner ~= ARGV[2] then
    return {0, redis.call('PTTL', KEYS[2 * i - 1]), i}
  end
end
local t = redis.call('TIME')
local now = t[1] * 1000000 + t[2]
local out = {1}
for i = 1, n do
  local lock, fence = KEYS[2 * i - 1], KEYS[2 * i]
  if redis.call('HGET', lock, 'o') == ARGV[2] then
    if (tonumber(redis.call('HGET', lock, 'a')) or 0) <= tonumber(ARGV[7]) then
      redis.call('HSET', lock, 'a', ARGV[7])
    end
    redis.call('PEXPIRE', lock, ARGV[4])
    out[i + 1] = tonumber(redis.call('HGET', lock, 'f'))
  else
    local token = math.max((tonumber(redis.call('GET', fence)) or 0) + 1, now)
    local s = string.format('%.0f', token)
    redis.call('SET', fence, s, 'PX', ARGV[5])
    redis.call('DEL', lock) -- a release's yield marker (see mutex_release.lua)
    redis.call('HSET', lock, 'o', ARGV[2], 'f', s, 'h', ARGV[6], 'a', ARGV[7])
    redis.call('PEXPIRE', lock, ARGV[4])
    out[i + 1] = token
  end
end
return out
