-- election_leader.lua: read who leads the election, without changing it.
-- KEYS[1] the election's lock (a mutex's: a string or a hash, see
-- lock_lib.lua), KEYS[2] leader record (see election_proclaim.lua)
-- Returns {1, 0} when nobody holds the lock; {1, 1, token} when it is held
-- with token and its holder has not recorded its value yet (or a record
-- stands from an earlier leader only); {1, 2, token, ms left, value} when
-- the record describes the holder: its token is not below the lock's, as
-- every later holder's token is above every earlier one (on a quorum a
-- node's lock can hold a token below the grant's, the largest of a
-- majority, which the leader records).
local v = redis.pcall('GET', KEYS[1])
local held
if type(v) == 'string' then
  held = tonumber(string.match(v, '^%S+ (%d+) '))
elseif type(v) == 'table' then
  -- WRONGTYPE: the lock hash; o is there while the lock is held.
  local h = redis.call('HMGET', KEYS[1], 'o', 'f')
  if h[1] then
    held = tonumber(h[2])
  end
end
if not held then
  return {1, 0}
end
local rec = redis.call('GET', KEYS[2])
if rec then
  local t, value = string.match(rec, '^(%d+) (.*)$')
  if t and tonumber(t) >= held then
    return {1, 2, tonumber(t), math.max(redis.call('PTTL', KEYS[1]), 0), value}
  end
end
return {1, 1, held}
