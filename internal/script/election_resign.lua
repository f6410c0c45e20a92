-- election_resign.lua: forget the record of a leader that resigned, when
-- it is still its own, and announce the resignation.
-- KEYS[1] lock (unused), KEYS[2] leader record
-- Arguments: ElectionResignArgs (election.go).
-- Run twice, or late, it removes no other leader's record.
-- Returns {1}.
local old = redis.call('GET', KEYS[2])
if old and string.match(old, '^(%d+) ') == token then
  redis.call('DEL', KEYS[2])
end
redis.call(publish, channel, 'r')
return {1}
