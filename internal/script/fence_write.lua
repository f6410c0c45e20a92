-- fence_write.lua: a write guarded by a fencing token.
-- Arguments: FenceWriteArgs (fence.go): op, the operation: set, del, hset or
-- hdel, the fencing token (decimal, positive), the write id, the ttl of the
-- value in ms (0: set leaves it without expiry, hset and hdel leave its
-- expiry alone), the retention of the guard in ms, and the operands: set:
-- the value; hset: field, value, ...; hdel: field, ...; del: none.
-- The write is made when the token is at least the highest seen; the same
-- token may write any number of times, in the order of their numbers (see
-- fence_lib.lua): a write with the highest token whose number is below the
-- last one made with it is a late copy of an earlier write, which a later
-- write has replaced: it is not made again, and reports the version that
-- stands.
-- Returns {1, new version}, also when id is the last write made (a
-- retried call, not made twice), or {-2, highest token seen / 1e9, highest
-- token seen % 1e9} when the token is lower than that (nothing changes).
--@use fence_lib
local v = last(id)
if v then
  return {1, v}
end
local seen = redis.call('HGET', guard, 't') or '0'
if lower(token, seen) then
  local hi, lo = split(seen)
  return {-2, hi, lo}
end
local seq = number(id)
if token == seen and seq then
  local last = tonumber(redis.call('HGET', guard, 's'))
  if last and seq < last then
    return {1, tonumber(redis.call('HGET', guard, 'v'))}
  end
end
-- Fields go to HSET and HDEL in chunks: unpack has a stack limit.
local CHUNK = 256
if op == 'set' then
  if ttl > 0 then
    redis.call('SET', value, operands[1], 'PX', ttl)
  else
    redis.call('SET', value, operands[1])
  end
elseif op == 'del' then
  redis.call('DEL', value)
elseif op == 'hset' or op == 'hdel' then
  local cmd = 'HSET'
  if op == 'hdel' then
    cmd = 'HDEL'
  end
  for i = 1, #operands, CHUNK do
    redis.call(cmd, value, unpack(operands, i, math.min(i + CHUNK - 1, #operands)))
  end
  if ttl > 0 then
    redis.call('PEXPIRE', value, ttl)
  end
else
  return redis.error_reply('ERR fence: unknown operation ' .. op)
end
return {1, commit(token, id, retention, seq)}
