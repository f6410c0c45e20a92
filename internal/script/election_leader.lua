-- election_leader.lua: read who holds the election's lock and the leader's
-- record, without changing them.
-- KEYS[1] the election's lock (a mutex's: a string or a hash, see
-- lock_lib.lua), KEYS[2] leader record (see election_proclaim.lua)
-- Returns {1, held (1 or 0), ms the hold has left, the record's token (0:
-- none), "<holder><recorder><value>"}: holder is the SHA1 of the owner
-- token of the hold and recorder that of the record's owner, 40 hex digits
-- each, or 40 '-' when there is none; value is the record's value. The
-- record describes the leader when its owner holds the lock: the owner,
-- not the token, tells, for on a quorum a node's lock can carry a token
-- other than the grant's (the largest of a majority, which the leader
-- records), and the hold and the record may stand on two different
-- majorities of the nodes, which the caller puts together by the digests.
-- The owner tokens, which are credentials, are never returned.
local none = string.rep('-', 40)
local v = redis.pcall('GET', KEYS[1])
local holder
if type(v) == 'string' then
  holder = string.match(v, '^(%S+) %d+ ')
elseif type(v) == 'table' then
  -- WRONGTYPE: the lock hash; o is there while the lock is held.
  holder = redis.call('HGET', KEYS[1], 'o')
end
local held, left, digest = 0, 0, none
if holder then
  held, left, digest = 1, math.max(redis.call('PTTL', KEYS[1]), 0), redis.sha1hex(holder)
end
local token, recorder, value = 0, none, ''
local rec = redis.call('GET', KEYS[2])
if rec then
  local t, owner, val = string.match(rec, '^(%d+) (%S+) (.*)$')
  if t then
    token, recorder, value = tonumber(t), redis.sha1hex(owner), val
  end
end
return {1, held, left, token, digest .. recorder .. value}
