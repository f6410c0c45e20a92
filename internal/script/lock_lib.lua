-- lock_lib.lua: the exclusive lock hash that the mutex and multi scripts
-- share, and with them the writer hash of the rwmutex and the hash of the
-- reentrant lock, whose holds differ (see their scripts) but whose lines of
-- waiting processes are the same; the Go side splices it into each of those
-- scripts. A mutex's lock hash holds:
--
--   the hold: o = owner token, f = fencing token, a = the attempt that
--   last granted it, c = the holder's cohort (the goroutines of one process
--   that queue for the name on one backend: "<host>/<pid>#<backend>");
--   the line of waiting cohorts: q:<cohort> = "<arrival> <until ms>" for
--   each cohort whose waiting attempt found the lock taken, and qn = the
--   last arrival number. A waiter refreshes its cohort's entry at each
--   attempt and keeps its arrival; an entry whose waiter stopped trying
--   (until passed) is dropped;
--   y = "<until ms> <cohort>": a release's yield marker, which refuses the
--   releasing cohort until it passes.
--
-- The key expires with the hold. Without a hold it lives as long as its
-- last line entry or its yield marker.
--
-- A release wakes the first cohort in line only, on its own channel (the
-- wake channel followed by ':' and the cohort), so that one process
-- contends for a freed lock rather than every process that waits; the
-- cohort's entry stays until it is granted, so that a cohort that lost a
-- race keeps its place. Every waiter is in line (its waiting attempts put
-- it there), so a release with nobody in line wakes nobody.

local lock_clock

-- lock_us returns the server time in microseconds, read once per script.
local function lock_us()
  if not lock_clock then
    local t = redis.call('TIME')
    lock_clock = tonumber(t[1]) * 1000000 + tonumber(t[2])
  end
  return lock_clock
end

-- lock_ms returns the server time in whole milliseconds, rounded down.
local function lock_ms()
  return math.floor(lock_us() / 1000)
end

local function lock_num(v)
  return string.format('%.0f', v)
end

-- lock_line returns the live entries of the line of lock, oldest first, as
-- {cohort, arrival, until}, and drops the entries whose waiter stopped
-- trying.
local function lock_line(lock)
  if redis.call('HEXISTS', lock, 'qn') == 0 then
    return {}
  end
  local now = lock_ms()
  local line = {}
  local flat = redis.call('HGETALL', lock)
  for i = 1, #flat, 2 do
    local field = flat[i]
    if string.sub(field, 1, 2) == 'q:' then
      local arrival, untilms = string.match(flat[i + 1], '^(%d+) (%d+)$')
      if arrival and tonumber(untilms) >= now then
        line[#line + 1] = {string.sub(field, 3), tonumber(arrival), tonumber(untilms)}
      else
        redis.call('HDEL', lock, field)
      end
    end
  end
  if #line == 0 then
    redis.call('HDEL', lock, 'qn')
  end
  table.sort(line, function(x, y) return x[2] < y[2] end)
  return line
end

-- lock_wait puts cohort in the line of lock, or keeps its place there, for
-- stale ms from now. held says that the lock is held: the key then expires
-- with the hold; otherwise it is made to outlive the entry.
local function lock_wait(lock, cohort, stale, held)
  local field = 'q:' .. cohort
  local arrival = string.match(redis.call('HGET', lock, field) or '', '^(%d+)')
  arrival = arrival and tonumber(arrival)
  if not arrival then
    arrival = redis.call('HINCRBY', lock, 'qn', 1)
  end
  redis.call('HSET', lock, field, lock_num(arrival) .. ' ' .. lock_num(lock_ms() + stale))
  if not held and redis.call('PTTL', lock) < stale then
    redis.call('PEXPIRE', lock, stale)
  end
end

-- lock_yielding returns the cohort that a live yield marker refuses and the
-- ms it still stands, or nil; it drops a marker that has passed.
local function lock_yielding(lock)
  local marker = redis.call('HGET', lock, 'y')
  if not marker then
    return nil
  end
  local untilms, cohort = string.match(marker, '^(%d+) (.*)$')
  if untilms and tonumber(untilms) >= lock_ms() then
    return cohort, math.max(tonumber(untilms) - lock_ms(), 1)
  end
  redis.call('HDEL', lock, 'y')
  return nil
end

-- lock_grant makes owner the holder of lock for ttl ms with the fencing
-- token token: its cohort leaves the line, and a yield marker is dropped.
local function lock_grant(lock, owner, token, attempt, cohort, ttl)
  redis.call('HDEL', lock, 'y', 'q:' .. cohort)
  redis.call('HSET', lock, 'o', owner, 'f', lock_num(token), 'a', attempt, 'c', cohort)
  redis.call('PEXPIRE', lock, ttl)
end

-- lock_vacate ends the hold of lock, keeping the line; it returns the live
-- line, oldest first. Every field but the line's and the yield marker is
-- the hold's (the reentrant lock's hash has a field named after its owner).
local function lock_vacate(lock)
  local line = lock_line(lock)
  if #line == 0 and not lock_yielding(lock) then
    redis.call('DEL', lock)
    return line
  end
  local hold = {}
  local flat = redis.call('HGETALL', lock)
  for i = 1, #flat, 2 do
    local field = flat[i]
    if field ~= 'qn' and field ~= 'y' and string.sub(field, 1, 2) ~= 'q:' then
      hold[#hold + 1] = field
    end
  end
  if #hold > 0 then
    redis.call('HDEL', lock, unpack(hold))
  end
  local life = 1
  for _, e in ipairs(line) do
    life = math.max(life, e[3] - lock_ms() + 1)
  end
  local _, yield = lock_yielding(lock)
  redis.call('PEXPIRE', lock, math.max(life, yield or 1))
  return line
end

-- lock_release ends the hold of lock and wakes the first cohort in line
-- (other than the holder's) on its own channel. When yield is positive and
-- another cohort waited, the holder's cohort is refused for yield ms, so
-- that the cohorts that waited get the lock first.
local function lock_release(lock, pub, channel, yield)
  local cohort = redis.call('HGET', lock, 'c') or ''
  local line = lock_line(lock)
  local first, other
  for _, e in ipairs(line) do
    if e[1] ~= cohort then
      other = other or e[1]
    end
    first = first or e[1]
  end
  if other and yield > 0 and cohort ~= '' then
    redis.call('HSET', lock, 'y', lock_num(lock_ms() + yield) .. ' ' .. cohort)
  end
  lock_vacate(lock)
  local woken = other or first
  if woken then
    redis.call(pub, channel .. ':' .. woken, 'u')
  end
end
