-- fence_lib.lua: definitions shared by the fence_*.lua scripts, which
-- include it first (--@use fence_lib). A fenced resource keeps:
--
-- KEYS[1] value: the caller's data, a string (set) or a hash (hset)
-- KEYS[2] guard hash: t = highest fencing token seen, v = version of the
--         value, w = id of the last write, s = the number of the last
--         write made with token t (t, v and s in decimal)
--
-- A write id is "<number>.<random>": the number orders the writes of one
-- process (see fence.writeID).
--
-- Tokens are compared as decimal strings, which is exact for every int64;
-- Lua's numbers are not above 2^53.
local value, guard = KEYS[1], KEYS[2]

-- lower reports whether decimal a is smaller than decimal b (both positive,
-- without leading zeros).
local function lower(a, b)
  if #a ~= #b then
    return #a < #b
  end
  return a < b
end

-- split returns decimal s as two numbers that a reply carries exactly: its
-- value divided by 1e9 and the remainder.
local function split(s)
  return tonumber(string.sub(s, 1, -10)) or 0, tonumber(string.sub(s, -9))
end

-- number returns the number of write id, or nil for an id without one.
local function number(id)
  local n = string.match(id, '^(%d+)%.')
  return n and tonumber(n)
end

-- last returns the version of the last write when its id is id (the write
-- is being retried), or nil.
local function last(id)
  if redis.call('HGET', guard, 'w') == id then
    return tonumber(redis.call('HGET', guard, 'v'))
  end
  return nil
end

-- nextVersion returns the version of the next write: the larger of the old
-- one plus one and the server clock in microseconds, so that a version never
-- repeats, even after the guard expired.
local function nextVersion()
  local clock = redis.call('TIME')
  local now = tonumber(clock[1]) * 1000000 + tonumber(clock[2])
  return math.max((tonumber(redis.call('HGET', guard, 'v')) or 0) + 1, now)
end

-- commit records a write of id: the version becomes the next (see
-- nextVersion), token (when not nil) becomes the highest seen, and the
-- guard lives as long as the value plus retention ms: without expiry while
-- the value has none, and retention ms from now when the value is gone. It
-- returns the new version.
local function commit(token, id, retention, seq)
  local v = nextVersion()
  local vs = string.format('%.0f', v)
  if token then
    redis.call('HSET', guard, 't', token, 'v', vs, 'w', id)
    if seq then
      redis.call('HSET', guard, 's', string.format('%.0f', seq))
    else
      redis.call('HDEL', guard, 's')
    end
  else
    redis.call('HSET', guard, 'v', vs, 'w', id)
  end
  local pttl = redis.call('PTTL', value)
  if pttl == -1 then
    redis.call('PERSIST', guard)
  else
    redis.call('PEXPIRE', guard, math.max(pttl, 0) + tonumber(retention))
  end
  return v
end
