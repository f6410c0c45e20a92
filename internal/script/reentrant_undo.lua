-- reentrant_undo.lua: give back what one reentrant_acquire.lua attempt took.
-- KEYS and arguments as reentrant_acquire.lua (ReentrantAcquireArgs,
-- reentrant.go), of which it reads owner, wake, count (the count that
-- acquisition set), and attempt and unsure: the attempts whose acquisition
-- is given back (an undo of one attempt names it as attempt; the cleanup
-- after a Lock that gave up names each attempt whose reply was lost). A
-- waiting attempt's place in line is left as it is.
-- The count goes down by one only if it is the count that acquisition set
-- and the last attempt that changed it is one of those named, so that an
-- undo of an attempt that took nothing changes nothing, and a late undo
-- leaves alone what a later attempt of the same owner took.
-- Returns {1}: nothing that those attempts took remains.
--@use lock_lib
local n = tonumber(redis.call('HGET', KEYS[1], owner))
if n ~= count then
  return {1}
end
local last = tonumber(redis.call('HGET', KEYS[1], 'a'))
local named = last == attempt
for _, a in ipairs(unsure) do
  if tonumber(a) == last then
    named = true
  end
end
if not named then
  return {1}
end
if count <= 1 then
  local line = lock_vacate(KEYS[1])
  if #line > 0 then
    redis.call(publish, wake .. ':' .. line[1][1], 'u')
  end
else
  redis.call('HSET', KEYS[1], owner, count - 1)
end
return {1}
