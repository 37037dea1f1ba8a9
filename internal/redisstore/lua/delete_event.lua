-- delete_event.lua: remove an event's keys unless someone holds a slot, and
-- leave its tombstone: its log (topic) is to delete. The keys are
-- unlinked (UNLINK): gone at once, their memory freed in the background,
-- so deleting a line of millions does not stall Redis.
--
-- KEYS[1] config HASH, KEYS[2] waiting ZSET, KEYS[3] holders ZSET, KEYS[4] stats HASH,
-- KEYS[5] seen ZSET, KEYS[6] served ZSET, KEYS[7] prequeue ZSET,
-- KEYS[8] control HASH, KEYS[9] health HASH, KEYS[10] changes LIST,
-- KEYS[11] unrecorded ZSET, KEYS[12] tombstone STRING, KEYS[13] holds HASH,
-- KEYS[14] sold HASH, KEYS[15] items HASH, KEYS[16] offsets HASH, KEYS[17] released ZSET,
-- KEYS[18] spent ZSET, KEYS[19] door HASH, KEYS[20] visits HASH, KEYS[21] freeing ZSET,
-- KEYS[22] series ZSET, KEYS[23] journal LIST, KEYS[24] gateways ZSET,
-- then the event's other keys (every one after KEYS[24] is unlinked too:
-- the away turns' called, callplaces, claims, lapsed, the arrived
-- admissions, and those added later)
-- ARGV[1] now (unix ms)
--
-- Returns OK when deleted (the tombstone set to now, in the same step),
-- SLOTS_IN_USE when a slot is held (nothing changed), TOMBSTONED when the
-- event has no configuration but its tombstone stands (deleted, its log
-- still to delete: nothing changed), NO_EVENT when it has neither.
if redis.call('EXISTS', KEYS[1]) == 0 then
  if redis.call('EXISTS', KEYS[12]) == 1 then
    return TOMBSTONED
  end
  return NO_EVENT
end
redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', ARGV[1])
if redis.call('ZCARD', KEYS[3]) > 0 then
  return SLOTS_IN_USE
end
local gone = {}
for i, key in ipairs(KEYS) do
  if i ~= 12 then
    gone[#gone + 1] = key
  end
end
redis.call('UNLINK', unpack(gone))
redis.call('SET', KEYS[12], ARGV[1])
return OK
