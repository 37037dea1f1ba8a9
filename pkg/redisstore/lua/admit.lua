-- admit.lua: move the head of an event's waiting line into free slots.
--
-- KEYS[1] config HASH, KEYS[2] waiting ZSET, KEYS[3] active ZSET,
-- KEYS[4] stats HASH, KEYS[5] seen ZSET, KEYS[6] served ZSET
-- ARGV[1] now (unix ms)
-- ARGV[2] batch: the most users one call admits
--
-- Drops holders whose hold ended (score <= now), then, unless the event is
-- paused (config.state), admits min(capacity - holders, waiting, batch) users from the head of the line
-- into active with score now + holdSeconds * 1000, adds them to
-- stats.admittedTotal, records the stamp of each admitted join in served
-- and forgets their presence. Atomic, so any number of
-- gateways may call it at once: holders never exceed capacity.
--
-- Returns {expiresAt, droppedHolders, holders, waiting, user1, user2, ...}
-- (holders and waiting after the admission; no users when nobody was
-- admitted), or -1 when the event has no configuration.
local conf = redis.call('HMGET', KEYS[1], 'capacity', 'holdSeconds', 'state')
if not conf[1] then
  return -1
end
local now = tonumber(ARGV[1])
local capacity, hold = tonumber(conf[1]), tonumber(conf[2])
local expires = now + hold * 1000
local dropped = redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', now)
local free = capacity - redis.call('ZCARD', KEYS[3])
local n = math.min(free, tonumber(ARGV[2]))
if conf[3] == 'paused' then
  n = 0
end
local out = {expires, dropped, 0, 0}
if n > 0 then
  local popped = redis.call('ZPOPMIN', KEYS[2], n)
  for i = 1, #popped, 2 do
    local user = popped[i]
    redis.call('ZADD', KEYS[3], expires, user)
    redis.call('ZADD', KEYS[6], popped[i + 1], user)
    redis.call('ZREM', KEYS[5], user)
    out[#out + 1] = user
  end
  local admitted = #out - 4
  if admitted > 0 then
    redis.call('HINCRBY', KEYS[4], 'admittedTotal', admitted)
  end
end
out[3] = redis.call('ZCARD', KEYS[3])
out[4] = redis.call('ZCARD', KEYS[2])
return out
