-- release.lua: give a held slot back, and admit the next in line at once
-- (after admission.lua, which it is run behind).
--
-- KEYS[1] config HASH, KEYS[2] waiting ZSET, KEYS[3] active ZSET,
-- KEYS[4] stats HASH, KEYS[5] seen ZSET, KEYS[6] served ZSET
-- ARGV[1] userId, ARGV[2] now (unix ms)
-- ARGV[3] batch: the most users the freed room admits at once (0: none;
-- the slot monitor's next round does)
-- ARGV[4] event id, ARGV[5] the admissions channel ('' : publish nothing)
--
-- Removes the user from active. Returns 1 when they held an unexpired slot,
-- else 0: releasing twice frees one slot, and nobody frees a slot they did
-- not hold. When a slot was freed and batch > 0 it runs admit()
-- (admission.lua), so the next in line gets it within the same step.
local hold = redis.call('ZSCORE', KEYS[3], ARGV[1])
if not hold then
  return 0
end
redis.call('ZREM', KEYS[3], ARGV[1])
local now = tonumber(ARGV[2])
if tonumber(hold) <= now then
  return 0
end
local batch = tonumber(ARGV[3])
if batch > 0 then
  local k = {config = KEYS[1], waiting = KEYS[2], active = KEYS[3], stats = KEYS[4], seen = KEYS[5], served = KEYS[6]}
  admit(k, ARGV[4], now, batch, ARGV[5])
end
return 1
