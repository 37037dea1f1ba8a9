-- release.lua: give a held slot back.
--
-- KEYS[1] active ZSET
-- ARGV[1] userId, ARGV[2] now (unix ms)
--
-- Removes the user from active. Returns 1 when they held an unexpired slot,
-- else 0: releasing twice frees one slot, and nobody frees a slot they did
-- not hold.
local hold = redis.call('ZSCORE', KEYS[1], ARGV[1])
if not hold then
  return 0
end
redis.call('ZREM', KEYS[1], ARGV[1])
if tonumber(hold) > tonumber(ARGV[2]) then
  return 1
end
return 0
