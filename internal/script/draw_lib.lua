-- draw_lib.lua: the draw of a fencing token and the block of tokens after
-- it from a name's fence counter, shared by the mutex's acquisitions
-- (mutex_take.lua, mutex_acquire.lua) and its reservation of a new block
-- (mutex_reserve.lua). It is straight-line code, not a function, so that
-- a script that draws pays for no closure (each function a script defines
-- is made at every run, before the fast path): a script includes it where
-- it draws, once per place (it defines no function, so it may be
-- included more than once, each time in a block of its own or after the
-- last use of the names it defines).
-- It reads the locals clock, block and fence_margin, and KEYS[2], the fence
-- counter; it defines the locals now (the clock in µs), t (the server's
-- TIME reply, nil when the caller's clock stood in), token (the token),
-- last (the block's last token) and text (the token's decimal when it was
-- written out, see below; nil otherwise).
-- The token is the larger of the counter plus one and the server clock in
-- microseconds, so that it still grows when the counter expired or went
-- back with a failover that lost its last writes. On a quorum the caller's
-- clock stands in for the server's: the nodes whose counters are behind it
-- then issue the same token, and a majority that agrees needs no
-- write-back of the largest (see backend.NewQuorum); the counters keep the
-- tokens growing. The counter matters only while it is ahead of the clock:
-- it expires fence_margin ms (a margin for clocks that go back) after the
-- clock passes it, so that a name used once costs no memory for long. One
-- call when the counter is behind the clock, as it is but for tokens drawn
-- within one microsecond or a clock that went back.
-- A Lua number given to a command is formatted again (as a string.format
-- would), which costs about as much as a command: where block is 1 and the
-- token is the server's clock, the counter is sent as the text of the TIME
-- reply (the seconds, then the µs on six digits), which the local text
-- keeps for the caller (nil otherwise), and its expiry as fence_margin as
-- it came (a script binds it as text where it can).
local now, t, text = clock, nil, nil
if now <= 0 then
  t = redis.call('TIME')
  now = t[1] * 1000000 + t[2]
end
local token, last = now, now + block - 1
local value, px = last, fence_margin
if block ~= 1 then
  px = math.ceil((block - 1) / 1000) + fence_margin
elseif t then
  text = t[1] .. string.sub(t[2] + 1000000, 2)
  value = text
end
local old = tonumber(redis.call('SET', KEYS[2], value, 'PX', px, 'GET')) or 0
if old >= now then
  token, last, text = old + 1, old + block, nil
  redis.call('SET', KEYS[2], last, 'PX', math.ceil((last - now) / 1000) + fence_margin)
end
