-- lock_lib.lua: the exclusive lock hash that the mutex and multi scripts
-- share, and with them the writer hash of the rwmutex and the hash of the
-- reentrant lock, whose holds differ (see their scripts) but whose lines of
-- waiting processes are the same; the Go side splices it into each of those
-- scripts. A mutex's lock hash holds:
--
--   the hold: o = owner token, f = fencing token, a = the attempt that
--   last granted it, c = the holder's cohort (the goroutines of one process
--   that queue for the name on one backend: "<host>/<pid>#<backend>"),
--   l = the last token of the block the grant reserved for the holders the
--   hold is handed to in its process, when there is more than f (see
--   lock_regrant);
--   the line of waiting cohorts: q:<cohort> = "<arrival> <until ms> <call>"
--   for each cohort whose waiting attempt found the lock taken, and qn = the
--   last arrival number. <call> numbers the acquisition calls of a cohort
--   (they only grow: the goroutines of a cohort contend one at a time, each
--   call with a new number). A waiter refreshes its cohort's entry at each
--   attempt and keeps its arrival; an entry whose waiter stopped trying
--   (until passed) is dropped. An entry whose arrival is 0 is a departure:
--   the call it names gave up (a leave) or was granted, and until it passes,
--   that call's late attempts, and those of earlier calls of the cohort,
--   neither join the line nor take the lock, so that a request delivered
--   after its caller moved on leaves nothing behind. The departure of a
--   grant also names the attempt that was granted ("0 <until ms> <call>
--   <attempt>"): it refuses that attempt and the earlier ones only. A later
--   attempt of the call is its caller trying again after that grant was
--   given back (a quorum's undo of a minority, a grant that came back after
--   its validity ran out), for the call's attempts are made one after the
--   other and each only once the one before failed: the call still waits,
--   and must not be shut out (on a quorum, a call refused on every node
--   where a grant of it was undone can reach no majority). A departure is
--   not in line; qn stays while any entry does, so that the fast path of an
--   acquisition (no qn) knows there is nothing to look at;
--   y = "<until ms> <cohort>": a release's yield marker, which refuses the
--   releasing cohort until it passes.
--
-- The key expires with the hold. Without a hold it lives as long as its
-- last line entry, departure or yield marker.
--
-- A mutex's hold that nobody contended is not a hash: the acquisition's
-- fast path stores it as a string, "<owner> <token> <cohort>", granted to
-- its call's first attempt (a = 1) with a block of one token (no l), and
-- the release's fast path deletes it. So the key exists exactly while the lock is held or anything of its
-- line stands, and an acquisition that finds no key takes the lock without
-- reading further. Every other script turns the string into the hash
-- first (lock_hash) and works on the hash only.
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

-- lock_hash turns a hold stored as a string by the mutex's fast path into
-- the lock hash, with the same owner, token, cohort and expiry, granted to
-- attempt 1. A hash, or no key, is left as it is.
local function lock_hash(lock)
  local v = redis.pcall('GET', lock)
  if type(v) ~= 'string' then
    return
  end
  local owner, token, cohort = string.match(v, '^(%S+) (%d+) (.*)$')
  if not owner then
    return -- not a hold of the library's: the hash's commands refuse it
  end
  local ttl = redis.call('PTTL', lock)
  redis.call('DEL', lock)
  redis.call('HSET', lock, 'o', owner, 'f', token, 'a', '1', 'c', cohort)
  redis.call('PEXPIRE', lock, math.max(ttl, 1))
end

-- lock_entry returns the entry of cohort in the line of lock: its arrival
-- (0: a departure), until ms, call number and, for the departure of a
-- grant, the attempt granted (nil otherwise); nil when it has none.
local function lock_entry(lock, cohort)
  local v = redis.call('HGET', lock, 'q:' .. cohort)
  if not v then
    return nil
  end
  local arrival, untilms, call, attempt = string.match(v, '^(%d+) (%d+) (%d+) ?(%d*)$')
  if not arrival then
    return nil
  end
  if attempt == '' then
    attempt = nil
  end
  return tonumber(arrival), tonumber(untilms), tonumber(call), tonumber(attempt)
end

-- lock_stale reports whether attempt of call of cohort has been overtaken:
-- a later call of the cohort has an entry, or call itself departed (for
-- the departure of a grant, at this attempt or a later one). Its requests
-- then arrive after its caller moved on, and must change nothing. attempt
-- may be nil (any attempt of the call).
local function lock_stale(lock, cohort, call, attempt)
  local arrival, _, last, granted = lock_entry(lock, cohort)
  if arrival == nil or last < call then
    return false
  end
  if last > call then
    return true
  end
  return arrival == 0 and not (granted and attempt and attempt > granted)
end

-- lock_line returns the live entries of the line of lock, oldest first, as
-- {cohort, arrival, until}, and drops the entries and departures that have
-- passed. The second result is the latest until among what stays (line and
-- departures), or 0.
local function lock_line(lock)
  if redis.call('HEXISTS', lock, 'qn') == 0 then
    return {}, 0
  end
  local now = lock_ms()
  local line, keep = {}, 0
  local flat = redis.call('HGETALL', lock)
  for i = 1, #flat, 2 do
    local field = flat[i]
    if string.sub(field, 1, 2) == 'q:' then
      local arrival, untilms = string.match(flat[i + 1], '^(%d+) (%d+) %d+ ?%d*$')
      untilms = tonumber(untilms)
      if arrival and untilms >= now then
        keep = math.max(keep, untilms)
        if arrival ~= '0' then
          line[#line + 1] = {string.sub(field, 3), tonumber(arrival), untilms}
        end
      else
        redis.call('HDEL', lock, field)
      end
    end
  end
  if keep == 0 then
    redis.call('HDEL', lock, 'qn')
  end
  table.sort(line, function(x, y) return x[2] < y[2] end)
  return line, keep
end

-- lock_keep makes a lock hash without a hold live until untilms.
local function lock_keep(lock, untilms)
  local ms = untilms - lock_ms() + 1
  if redis.call('PTTL', lock) < ms then
    redis.call('PEXPIRE', lock, ms)
  end
end

-- lock_wait puts call of cohort in the line of lock, or keeps the cohort's
-- place there, for stale ms from now, for its attempt attempt (nil: not
-- known); it does nothing for a stale attempt (see lock_stale). held says
-- that the lock is held: the key then expires with the hold; otherwise it
-- is made to outlive the entry.
local function lock_wait(lock, cohort, call, stale, held, attempt)
  if lock_stale(lock, cohort, call, attempt) then
    return
  end
  local arrival, untilms = lock_entry(lock, cohort)
  if not arrival or arrival == 0 or untilms < lock_ms() then
    arrival = redis.call('HINCRBY', lock, 'qn', 1)
  end
  local untilms = lock_ms() + stale
  redis.call('HSET', lock, 'q:' .. cohort, lock_num(arrival) .. ' ' .. lock_num(untilms) .. ' ' .. lock_num(call))
  if not held then
    lock_keep(lock, untilms)
  end
end

-- lock_depart records that call of cohort left the line of lock (it gave
-- up, or it was granted): a departure that stands for stale ms, unless a
-- later call of the cohort has an entry already. attempt is the attempt
-- granted, for the departure of a grant, and nil for one that ends the
-- call whatever its attempts (a leave); a departure of the call that stands
-- already keeps refusing what it refused. held says that the lock is held:
-- the key then expires with the hold (which must not outlive its TTL);
-- otherwise it is made to outlive the departure. It returns whether the
-- cohort was in line.
local function lock_depart(lock, cohort, call, stale, held, attempt)
  local arrival, untilms, last, granted = lock_entry(lock, cohort)
  if arrival and last > call then
    return false
  end
  local refuses = attempt
  if arrival == 0 and last == call and untilms >= lock_ms() then
    refuses = nil
    if granted and attempt then
      refuses = math.max(attempt, granted)
    end
  end
  local was = arrival ~= nil and arrival > 0 and untilms >= lock_ms()
  local departs = lock_ms() + stale
  local v = '0 ' .. lock_num(departs) .. ' ' .. lock_num(call)
  if refuses then
    v = v .. ' ' .. lock_num(refuses)
  end
  redis.call('HSET', lock, 'q:' .. cohort, v)
  if redis.call('HEXISTS', lock, 'qn') == 0 then
    redis.call('HSET', lock, 'qn', '0')
  end
  if not held then
    lock_keep(lock, departs)
  end
  return was
end

-- lock_departs reports whether the grant of attempt to cohort records the
-- departure of its call: when the cohort has an entry in line (the call
-- waited, or an earlier call's place is taken over), and when attempt is
-- not the call's first. The earlier attempts of that call failed for its
-- caller, with a lost reply among them, or it would not have tried again:
-- one may still be on its way, and once the hold is released it must
-- neither take the free lock for an owner that is gone nor put the cohort
-- in line; the departure refuses it (see lock_stale).
local function lock_departs(lock, cohort, attempt)
  return tonumber(attempt) > 1 or lock_entry(lock, cohort) ~= nil
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
-- token token, granted to attempt of call of cohort: a yield marker is
-- dropped, and the cohort's entry in line, if it has one, becomes the
-- departure of that attempt (see lock_depart), as does a grant to a later
-- attempt than the call's first (see lock_departs).
local function lock_grant(lock, owner, token, attempt, cohort, call, stale, ttl)
  redis.call('HDEL', lock, 'y')
  if lock_departs(lock, cohort, attempt) then
    lock_depart(lock, cohort, call, stale, true, tonumber(attempt))
  end
  redis.call('HSET', lock, 'o', owner, 'f', lock_num(token), 'a', attempt, 'c', cohort)
  redis.call('PEXPIRE', lock, ttl)
end

-- lock_regrant gives the hold of lock that its owner has already back to
-- attempt of call of cohort: a retried attempt whose earlier attempt took
-- the lock and lost its reply, or the same request run twice. The recorded
-- attempt never goes back (an earlier attempt that arrives late changes it
-- not), the expiry is at least that of a new grant (never shorter: the
-- hold may have been extended), and the call's departure is recorded as a
-- grant to attempt records it (see lock_departs): an attempt before it may
-- still be on its way, and once the hold is released it must find the
-- departure that refuses it. Returns the hold's token and the last token
-- of the block its grant reserved, whatever block attempt asks for: the
-- tokens past it were never drawn from the fence counter.
local function lock_regrant(lock, attempt, cohort, call, stale, ttl)
  if (tonumber(redis.call('HGET', lock, 'a')) or 0) <= attempt then
    redis.call('HSET', lock, 'a', attempt)
  end
  if redis.call('PTTL', lock) < ttl then
    redis.call('PEXPIRE', lock, ttl)
  end
  if lock_departs(lock, cohort, attempt) then
    lock_depart(lock, cohort, call, stale, true, tonumber(attempt))
  end
  local hold = redis.call('HMGET', lock, 'f', 'l')
  return tonumber(hold[1]), tonumber(hold[2] or hold[1])
end

-- lock_vacate ends the hold of lock, keeping the line and the departures;
-- it returns the live line, oldest first. Every field but the line's and
-- the yield marker is the hold's (the reentrant lock's hash has a field
-- named after its owner).
local function lock_vacate(lock)
  local line, keep = lock_line(lock)
  local _, yield = lock_yielding(lock)
  if keep == 0 and not yield then
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
  redis.call('PEXPIRE', lock, math.max(keep - lock_ms() + 1, yield or 1, 1))
  return line
end

-- lock_release ends the hold of lock and wakes the first cohort in line
-- (other than the holder's) on its own channel. When yield is positive and
-- another cohort waited, the holder's cohort is refused for yield ms, so
-- that the cohorts that waited get the lock first. holder is the holder's
-- cohort, or nil to read it from the hold (field c).
local function lock_release(lock, pub, channel, yield, holder)
  local cohort = holder or redis.call('HGET', lock, 'c') or ''
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
