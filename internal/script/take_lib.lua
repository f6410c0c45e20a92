-- take_lib.lua: take, the fast path of a mutex's acquisition, shared by
-- the first attempt of mutex_acquire.lua and by mutex_take.lua. It reads
-- the locals owner, cohort and ttl, and draw (draw_lib.lua).
-- No lock key means a free lock with nobody in line and no yield marker
-- (see lock_lib.lua): take draws the token first and then takes the lock
-- as the string "<owner> <token> <cohort>" with SET NX, so that one
-- command both finds the key absent and takes it; an attempt that finds
-- the lock taken has moved the counter on by the tokens it drew, which
-- only skips them. The same request run again (a retry after a lost reply)
-- finds its own string and gets its hold back with its token and an expiry
-- at least that of a new grant. redis.pcall, for GET fails on a hash; the
-- owner is compared in place (string.find, string.byte: 32 is the space
-- after it), for a string made to compare costs as much as a command.
-- take returns the token when held, else nil and, when the key is a string
-- that is not the owner's, that string.
local function take(lock)
  local token = draw()
  if redis.call('SET', lock, owner .. ' ' .. string.format('%.0f', token) .. ' ' .. cohort, 'NX', 'PX', ttl) then
    return token
  end
  local hold = redis.pcall('GET', lock)
  if type(hold) ~= 'string' then
    return nil, nil
  end
  if string.find(hold, owner, 1, true) == 1 and string.byte(hold, #owner + 1) == 32 then
    if redis.call('PTTL', lock) < ttl then
      redis.call('PEXPIRE', lock, ttl)
    end
    return tonumber(string.match(hold, '^%S+ (%d+)'))
  end
  return nil, hold
end
