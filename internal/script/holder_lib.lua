-- holder_lib.lua: lock_holder, shared by the scripts that act on an
-- exclusive hold whichever form it has (see lock_lib.lua): the mutex's
-- renewal (also the rwmutex writer's) and its reservation of a block.

-- lock_holder returns the owner token of the hold of lock, a string
-- "<owner> <token> <cohort>" or a hash with the field o, or nil when there
-- is none. redis.pcall, for GET fails on a hash.
local function lock_holder(lock)
  local hold = redis.pcall('GET', lock)
  if type(hold) == 'string' then
    return string.match(hold, '^(%S+)')
  elseif hold then
    return redis.call('HGET', lock, 'o')
  end
  return nil
end
