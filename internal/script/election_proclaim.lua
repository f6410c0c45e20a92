-- election_proclaim.lua: record the value of a leader that holds the
-- election's lock with token, unless a later leader has recorded its own,
-- and announce it.
-- KEYS[1] lock (read by election_leader.lua only), KEYS[2] leader record
-- Arguments: ElectionProclaimArgs (election.go).
-- The record is the string "<token> <owner> <value>", kept for retention
-- ms, where owner is the owner token of the leader's hold: it describes
-- the leader only while the lock is held by that owner (see
-- election_leader.lua), so a record left behind by a leader that is gone
-- describes nobody. Run twice, it records and announces the same.
-- Returns {1} when recorded, {-2} when a leader with a later token has.
local old = redis.call('GET', KEYS[2])
if old then
  local t = tonumber(string.match(old, '^(%d+) '))
  if t and t > tonumber(token) then
    return {-2}
  end
end
redis.call('SET', KEYS[2], token .. ' ' .. owner .. ' ' .. value, 'PX', retention)
redis.call(publish, channel, 'p')
return {1}
