-- take_lib.lua: the fast path of a mutex's acquisition, shared by the first
-- attempt of mutex_acquire.lua and by mutex_take.lua. Straight-line code,
-- not a function (see draw_lib.lua, which it follows): it reads the locals
-- owner, cohort and ttl, KEYS[1] (the lock), and draw_lib.lua's token and
-- text; it defines the locals granted (the token when the caller holds
-- the lock, else nil) and hold (when the key is a string that is not the
-- caller's: that string, else nil).
-- No lock key means a free lock with nobody in line and no yield marker
-- (see lock_lib.lua): the token is drawn first and the lock then taken as
-- the string "<owner> <token> <cohort>" with SET NX, so that one command
-- both finds the key absent and takes it; an attempt that finds the lock
-- taken has moved the counter on by the tokens it drew, which only skips
-- them. The token's decimal is draw_lib.lua's text where it wrote it out
-- (which costs less than a string.format). The same request run again (a
-- retry after a lost reply) finds its own string and gets its hold back
-- with its token and an expiry at least that of a new grant. redis.pcall, for GET fails on a
-- hash; the owner is compared in place (string.find, string.byte: 32 is
-- the space after it), for a string made to compare costs as much as a
-- command.
if not text then
  text = string.format('%.0f', token)
end
local granted, hold = nil, nil
if redis.call('SET', KEYS[1], owner .. ' ' .. text .. ' ' .. cohort, 'NX', 'PX', ttl) then
  granted = token
else
  hold = redis.pcall('GET', KEYS[1])
  if type(hold) ~= 'string' then
    hold = nil
  elseif string.find(hold, owner, 1, true) == 1 and string.byte(hold, #owner + 1) == 32 then
    if redis.call('PTTL', KEYS[1]) < ttl + 0 then
      redis.call('PEXPIRE', KEYS[1], ttl)
    end
    granted, hold = tonumber(string.match(hold, '^%S+ (%d+)')), nil
  end
end
