-- spend.lua: spend a join's one-time proofs (challenge solutions, one-time
-- join tokens), all or none, and count the join through the door.
--
-- KEYS[1] config HASH, KEYS[2] spent ZSET, KEYS[3] door HASH
-- ARGV[1] now (unix ms), ARGV[2] the join-rate window (ms), ARGV[3] 1 when
-- a challenge is among the spends, ARGV[4] the keep (ms), then pairs of
-- (member, until unix ms)
--
-- Drops the spends whose until is more than the keep before now (the keep
-- is the most replicas' clocks may differ: a replica whose clock runs
-- ahead must not drop a proof another still takes), then: when a member is
-- spent already, returns it and changes nothing; else adds every
-- member with its until, counts the join in the current window of the door
-- (the window before kept as prev), counts a challenge solved, and returns
-- OK. NO_EVENT when the event has no configuration.
if redis.call('EXISTS', KEYS[1]) == 0 then
  return NO_EVENT
end
local now = tonumber(ARGV[1])
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now - tonumber(ARGV[4]))
for i = 5, #ARGV, 2 do
  if redis.call('ZSCORE', KEYS[2], ARGV[i]) then
    return ARGV[i]
  end
end
for i = 5, #ARGV, 2 do
  redis.call('ZADD', KEYS[2], ARGV[i + 1], ARGV[i])
end
local window = math.floor(now / tonumber(ARGV[2]))
local door = redis.call('HMGET', KEYS[3], 'w', 'n')
local w, n = tonumber(door[1]), tonumber(door[2]) or 0
if w ~= window then
  local prev = 0
  if w == window - 1 then
    prev = n
  end
  redis.call('HSET', KEYS[3], 'w', window, 'n', 0, 'prev', prev)
end
redis.call('HINCRBY', KEYS[3], 'n', 1)
if ARGV[3] == '1' then
  redis.call('HINCRBY', KEYS[3], 'solved', 1)
end
return OK
