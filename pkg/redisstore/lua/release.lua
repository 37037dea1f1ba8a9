-- release.lua: give a held slot back, and admit the next in line at once
-- (after admission.lua, which it is run behind).
--
-- KEYS[1..9] the admission keys (admission.lua)
-- ARGV[1] userId, ARGV[2] now (unix ms)
-- ARGV[3] batch: the most users the freed room admits at once (0: none;
-- the slot monitor's next round does)
-- ARGV[4] event id, ARGV[5] the admissions channel ('' : publish nothing)
--
-- Removes the user from active. Returns 1 when they held an unexpired slot,
-- else 0: releasing twice frees one slot, and nobody frees a slot they did
-- not hold. When a slot was freed and batch > 0 it runs admit()
-- (admission.lua), so the next in line gets it within the same step.
local hold = redis.call('ZSCORE', K.active, ARGV[1])
if not hold then
  return 0
end
redis.call('ZREM', K.active, ARGV[1])
local now = tonumber(ARGV[2])
if tonumber(hold) <= now then
  return 0
end
local batch = tonumber(ARGV[3])
if batch > 0 then
  admit(ARGV[4], now, batch, ARGV[5])
end
return 1
