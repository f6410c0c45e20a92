-- fifo_lib.lua: definitions shared by the fifo_*.lua scripts, which include
-- it first (--@use fifo_lib). A FIFO primitive (the fair lock: one permit;
-- the weighted semaphore: n permits) keeps:
--
-- KEYS[1] state hash: n = the limit, used = permits out,
--         h:<owner> = "<permits> <fencing token> <ticket> <attempt>
--         [<slots>]" per hold (the attempt is the one that last granted
--         it; the slots, on a quorum, see below), b = the slot map, on a
--         quorum: one character per permit slot, '1' when a hold has it,
--         w:<waiter> = "<permits wanted> <enqueue>" per waiter, with the
--         number of the enqueue that last queued it (see fifo_unjoin.lua)
-- KEYS[2] deadlines zset: h:<owner> -> hold expiry, w:<waiter> -> heartbeat
--         deadline, x:<waiter> -> the end of a departure, all in server
--         milliseconds
-- KEYS[3] queue zset: <waiter> -> ticket; the lowest ticket is served first
-- KEYS[4] fence counter: fencing tokens and tickets, one growing sequence
--
-- A waiter id is "<channel>.<call>": every Acquire call waits under an id of
-- its own, and a handle reuses its channels (the wake channel of a waiter is
-- the prefix followed by the channel part of its id). A waiter that leaves
-- the queue because it was granted or gave up leaves a departure for a
-- heartbeat timeout: a heartbeat or an enqueue of that id delivered later
-- (a request that arrived after its caller moved on) does not put it back.
-- A waiter dropped because its heartbeats stopped leaves none: a live
-- waiter that could not reach Redis for a while is put back at its ticket
-- by its next heartbeat.
--
-- The scripts' arguments are described in fifo.go. The functions here read
-- two of them by name: prefix, the wake channel prefix (the scripts that
-- wake waiters), and fence_margin, how long the fence counter outlives the
-- clock passing it (see mutex_acquire.lua; the scripts that draw numbers).
--
-- Permit slots (a semaphore on a quorum): each permit is a numbered slot
-- that one hold at a time has, and a grant names the slots it took,
-- "3,7" (from 0), the first free ones from a slot the caller chose (its
-- attempt's slot argument, from 1; 0: no slots), in the record and in its
-- reply ("s3,7": a string that no client reads as a number). Nodes in the same state grant the same slots to the same
-- request; a quorum counts a grant only on the nodes that agree on its
-- slots (see driver.Script.ByAgreement), so that no slot is held by two
-- owners on a majority each: the holds valid on the quorum never hold
-- more than n permits in all, whatever the nodes' disagreements. A
-- partial release keeps the first slots of a hold, and so keeps the nodes
-- in agreement.
--
-- Expired holds and waiters are removed lazily by whichever script runs
-- next, in deadline order, each at O(log N): nothing is ever rescored.
local state, deadlines, queue, fence = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
-- How many waiters, from the head, a script looks at: a waiter further back
-- is not admitted (nor woken) until the queue ahead of it is shorter.
local SCAN = 256
local clock = redis.call('TIME')
local nowus = tonumber(clock[1]) * 1000000 + tonumber(clock[2])
-- now is the server time in whole milliseconds, rounded down. A deadline is
-- rounded up, and passes only once now is beyond it, so that a hold never
-- ends before its full TTL (as a key with PX does).
local now = math.floor(nowus / 1000)

-- Numbers go to Redis formatted in full: Lua would print 16-digit values in
-- exponent form and lose digits.
local function num(v)
  return string.format('%.0f', v)
end

-- at returns the deadline ms milliseconds from now.
local function at(ms)
  return math.floor((nowus + 999) / 1000) + ms
end

local function used()
  return tonumber(redis.call('HGET', state, 'used')) or 0
end

local function limit()
  return tonumber(redis.call('HGET', state, 'n'))
end

-- parse splits a hold record into permits, fencing token, ticket, the
-- attempt that granted it and its slots ('' without slots).
local function parse(rec)
  local k, token, ticket, attempt, slots = string.match(rec, '^(%d+) (%d+) (%d+) (%S*) ?(%S*)$')
  return tonumber(k), tonumber(token), tonumber(ticket), attempt, slots
end

-- record returns the hold record of its parts (slots may be nil or '').
local function record(k, token, ticket, attempt, slots)
  local rec = num(k) .. ' ' .. num(token) .. ' ' .. num(ticket) .. ' ' .. attempt
  if slots and slots ~= '' then
    rec = rec .. ' ' .. slots
  end
  return rec
end

-- slots_set marks the slots of the list slots ("3,7") in the slot map as
-- taken (c = '1') or free (c = '0').
local function slots_set(slots, c)
  if not slots or slots == '' then
    return
  end
  local b = redis.call('HGET', state, 'b')
  if not b then
    return
  end
  for s in string.gmatch(slots, '%d+') do
    local i = tonumber(s) + 1
    b = string.sub(b, 1, i - 1) .. c .. string.sub(b, i + 1)
  end
  redis.call('HSET', state, 'b', b)
end

-- slots_take takes k free slots of n, the first ones from slot first (from
-- 1) on, wrapping around, and returns their list, or nil when fewer are
-- free.
local function slots_take(k, n, first)
  local b = redis.call('HGET', state, 'b')
  if not b or #b ~= n then
    b = string.rep('0', n)
    redis.call('HSET', state, 'b', b)
  end
  local start = ((first - 1) % n) + 1
  local got, i = {}, start
  while #got < k do
    local f = string.find(b, '0', i, true)
    if not f then
      break
    end
    got[#got + 1] = f - 1
    i = f + 1
  end
  i = 1
  while #got < k do
    local f = string.find(b, '0', i, true)
    if not f or f >= start then
      break
    end
    got[#got + 1] = f - 1
    i = f + 1
  end
  if #got < k then
    return nil
  end
  local slots = table.concat(got, ',')
  slots_set(slots, '1')
  return slots
end

-- slots_keep returns the first k slots of the list slots.
local function slots_keep(slots, k)
  local out = {}
  for s in string.gmatch(slots, '%d+') do
    if #out == k then
      break
    end
    out[#out + 1] = s
  end
  return table.concat(out, ',')
end

local function want(id)
  local v = redis.call('HGET', state, 'w:' .. id)
  return tonumber(v and string.match(v, '^(%d+)')) or 1
end

-- drop_waiter removes a waiter; it reports whether the waiter was queued.
local function drop_waiter(id)
  redis.call('ZREM', deadlines, 'w:' .. id)
  redis.call('HDEL', state, 'w:' .. id)
  return redis.call('ZREM', queue, id) == 1
end

-- depart removes a waiter that was granted or gave up, and records its
-- departure for timeout ms (see above); it reports whether the waiter was
-- queued.
local function depart(id, timeout)
  local was = drop_waiter(id)
  redis.call('ZADD', deadlines, num(now + timeout), 'x:' .. id)
  if redis.call('PTTL', deadlines) < timeout + 2 then
    redis.call('PEXPIRE', deadlines, num(timeout + 2))
  end
  return was
end

-- departed reports whether waiter id left the queue for good (see depart).
local function departed(id)
  local untilms = tonumber(redis.call('ZSCORE', deadlines, 'x:' .. id))
  return untilms ~= nil and untilms >= now
end

-- drop_hold removes a hold of k permits, which had slots (or '').
local function drop_hold(member, k, slots)
  slots_set(slots, '0')
  redis.call('ZREM', deadlines, member)
  redis.call('HDEL', state, member)
  if redis.call('HINCRBY', state, 'used', -k) < 0 then
    redis.call('HSET', state, 'used', 0)
  end
end

-- reclaim removes the holds and waiters whose deadline has passed and
-- reports whether it removed any.
local function reclaim()
  local dead = redis.call('ZRANGEBYSCORE', deadlines, '-inf', '(' .. num(now), 'LIMIT', 0, 128)
  for _, member in ipairs(dead) do
    local kind = string.sub(member, 1, 2)
    if kind == 'h:' then
      local rec = redis.call('HGET', state, member)
      if rec then
        local k, _, _, _, slots = parse(rec)
        drop_hold(member, k, slots)
      else
        redis.call('ZREM', deadlines, member)
      end
    elseif kind == 'x:' then
      redis.call('ZREM', deadlines, member)
    else
      drop_waiter(string.sub(member, 3))
    end
  end
  return #dead > 0
end

-- fits reports whether k permits may go to waiter id now: they must be free
-- on top of what every waiter ahead of it wants. A caller that is not queued
-- counts as the last in line. The second result is the caller's rank from 0,
-- or false when it is not queued.
local function fits(id, k, n)
  local rank = false
  if id ~= '' then
    rank = redis.call('ZRANK', queue, id)
  end
  local ahead = rank or redis.call('ZCARD', queue)
  local room = n - used() - k
  if room < 0 or ahead > SCAN then
    return false, rank
  end
  if ahead > 0 then
    for _, w in ipairs(redis.call('ZRANGE', queue, 0, ahead - 1)) do
      room = room - want(w)
      if room < 0 then
        return false, rank
      end
    end
  end
  return true, rank
end

-- wake publishes to every waiter, from the head, that the free permits can
-- serve: the head alone for a lock, as many as fit for a semaphore. A waiter
-- whose id is skip counts, but is not woken: the caller of an undo, which
-- tries again on its own.
local function wake(skip)
  local n = limit()
  if not n then
    return
  end
  local room = n - used()
  if room <= 0 then
    return
  end
  for _, w in ipairs(redis.call('ZRANGE', queue, 0, SCAN - 1)) do
    room = room - want(w)
    if room < 0 then
      return
    end
    if w ~= skip then
      redis.call(publish, prefix .. string.match(w, '^[^.]*'), 'w')
    end
  end
end

-- extend makes the three keys live until a deadline ms from now has passed,
-- never less: they outlive every deadline they hold.
local function extend(ms)
  ms = ms + 2
  for _, key in ipairs({state, deadlines, queue}) do
    if redis.call('PTTL', key) < ms then
      redis.call('PEXPIRE', key, num(ms))
    end
  end
end

-- tidy deletes the state once nothing is held or queued, so that the name
-- can be used with another limit; departures stay until they end.
local function tidy()
  if used() == 0 and redis.call('ZCARD', queue) == 0 then
    redis.call('DEL', state, queue)
  end
end

-- next_number draws the next number of the fence sequence: the larger of
-- the counter plus one and the server clock in microseconds, so that it
-- still grows when the counter expired or a failover lost its last writes.
-- On a quorum an acquisition proposes the caller's clock (proposed, in
-- microseconds) instead of the server's: the nodes whose counters are
-- behind it then draw the same number, and a majority that agrees needs no
-- write-back of the largest (as for the mutex, see mutex_acquire.lua).
-- The counter expires fence_margin ms after the clock passes it (see
-- mutex_acquire.lua).
local function next_number(proposed)
  if not proposed or proposed <= 0 then
    proposed = nowus
  end
  local v = math.max((tonumber(redis.call('GET', fence)) or 0) + 1, proposed)
  redis.call('SET', fence, num(v), 'PX', num(math.max(math.ceil((v - nowus) / 1000), 0) + fence_margin))
  return v
end

-- raise_fence makes the counter at least v.
local function raise_fence(v)
  if (tonumber(redis.call('GET', fence)) or 0) < v then
    redis.call('SET', fence, num(v), 'PX', num(math.max(math.ceil((v - nowus) / 1000), 0) + fence_margin))
  end
end

-- hint returns the milliseconds until the earliest deadline has passed, when
-- a hold may expire or a silent waiter be dropped (0: none).
local function hint()
  local first = redis.call('ZRANGE', deadlines, 0, 15, 'WITHSCORES')
  for i = 1, #first, 2 do
    if string.sub(first[i], 1, 2) ~= 'x:' then
      return math.max(tonumber(first[i + 1]) + 1 - now, 1)
    end
  end
  return 0
end
