-- admit.lua: the slot monitor's admission round for one event (after
-- admission.lua, which it is run behind).
--
-- KEYS[1..9] the admission keys (admission.lua)
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
local expires, dropped, admitted = admit(ARGV[3], tonumber(ARGV[1]), tonumber(ARGV[2]), ARGV[4])
if not expires then
  return -1
end
local out = {expires, dropped, redis.call('ZCARD', K.active), redis.call('ZCARD', K.waiting)}
for _, user in ipairs(admitted) do
  out[#out + 1] = user
end
return out
