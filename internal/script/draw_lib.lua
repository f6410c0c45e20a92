-- draw_lib.lua: draw, which takes a fencing token and the block of tokens
-- after it from a name's fence counter, shared by the mutex's acquisition
-- (mutex_acquire.lua) and its reservation of a new block (mutex_reserve.lua).
-- It reads the locals clock, block and fence_margin, and KEYS[2], the fence
-- counter.
-- draw takes the token and the block after it from the fence counter, and
-- returns the token and the block's last token. The token is the larger of the counter plus one and
-- the server clock in microseconds, so that it still grows when the counter
-- expired or went back with a failover that lost its last writes. On a
-- quorum the caller's clock stands in for the server's: the nodes whose
-- counters are behind it then issue the same token, and a majority that
-- agrees needs no write-back of the largest (see backend.NewQuorum); the
-- counters keep the tokens growing. The counter matters only while it is
-- ahead of the clock: it expires fence_margin ms (a margin for clocks that
-- go back) after the clock passes it, so that a name used once costs no
-- memory for long. One call when the counter is behind the clock, as it is
-- but for tokens drawn within one microsecond or a clock that went back.
-- (One function, its helpers written out: each function a script defines
-- is made at every run, before the fast path. The counter is sent as a Lua
-- number, which Redis, Valkey and the embedded Redis write as an integer
-- when it is whole, as it is below 2^53: a string.format costs as much as
-- a command.)
local function draw()
  local now = clock
  if now <= 0 then
    local t = redis.call('TIME')
    now = t[1] * 1000000 + t[2]
  end
  local token, last = now, now + block - 1
  local old = tonumber(redis.call('SET', KEYS[2], last, 'PX', math.ceil((last - now) / 1000) + fence_margin, 'GET')) or 0
  if old >= now then
    token, last = old + 1, old + block
    redis.call('SET', KEYS[2], last, 'PX', math.ceil((last - now) / 1000) + fence_margin)
  end
  return token, last
end
