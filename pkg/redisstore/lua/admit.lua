-- admit.lua: the slot monitor's admission round for one event (after
-- admission.lua, which it is run behind).
--
-- KEYS[1] config HASH, KEYS[2] waiting ZSET, KEYS[3] active ZSET,
-- KEYS[4] stats HASH, KEYS[5] seen ZSET, KEYS[6] served ZSET
-- ARGV[1] now (unix ms)
-- ARGV[2] batch: the most users one call admits
-- ARGV[3] event id, ARGV[4] the admissions channel ('' : publish nothing)
--
-- Runs admit() (admission.lua): atomic, so any number of gateways may call
-- it at once: holders never exceed capacity, admissions never exceed the
-- rate.
--
-- Returns {expiresAt, droppedHolders, holders, waiting, user1, user2, ...}
-- (holders and waiting after the admission; no users when nobody was
-- admitted), or -1 when the event has no configuration.
local k = {config = KEYS[1], waiting = KEYS[2], active = KEYS[3], stats = KEYS[4], seen = KEYS[5], served = KEYS[6]}
local expires, dropped, admitted = admit(k, ARGV[3], tonumber(ARGV[1]), tonumber(ARGV[2]), ARGV[4])
if not expires then
  return -1
end
local out = {expires, dropped, redis.call('ZCARD', KEYS[3]), redis.call('ZCARD', KEYS[2])}
for _, user in ipairs(admitted) do
  out[#out + 1] = user
end
return out
