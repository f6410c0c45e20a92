-- inspect.lua: read every key of a name's primitives as they stand, for
-- admin.Inspect and redisync status; it changes nothing.
-- KEYS: every key of the name's primitives that holds state (see
-- InspectKeys in inspect.go), in any order.
-- Arguments: InspectArgs (inspect.go): the name's wake channel.
-- Returns {1, the server's clock in ms, processes subscribed to the wake
-- channel, dump}, where dump is, for each key in order, its type (TYPE), its
-- PTTL, the number of items that follow and the items: the string's value,
-- a hash's fields and values, or a sorted set's members and scores; each
-- as "<length>:<bytes>", so that any byte can be in a value.
local out = {}
local function put(s)
  out[#out + 1] = #s .. ':' .. s
end
local t = redis.call('TIME')
local now = t[1] * 1000 + math.floor(t[2] / 1000)
for _, key in ipairs(KEYS) do
  local kind = redis.call('TYPE', key)['ok']
  local items = {}
  if kind == 'string' then
    items = {redis.call('GET', key)}
  elseif kind == 'hash' then
    items = redis.call('HGETALL', key)
  elseif kind == 'zset' then
    items = redis.call('ZRANGE', key, 0, -1, 'WITHSCORES')
  end
  put(kind)
  put(tostring(redis.call('PTTL', key)))
  put(tostring(#items))
  for _, v in ipairs(items) do
    put(v)
  end
end
local sub = 'NUMSUB'
if publish == 'spublish' or publish == 'SPUBLISH' then
  sub = 'SHARDNUMSUB'
end
local listening = redis.call('PUBSUB', sub, wake)[2]
return {1, now, listening, table.concat(out)}
