-- delete_event.lua: remove an event's keys unless someone holds a slot.
--
-- KEYS[1] config HASH, KEYS[2] waiting ZSET, KEYS[3] active ZSET, KEYS[4] stats HASH,
-- KEYS[5] seen ZSET, KEYS[6] served ZSET, KEYS[7] prequeue ZSET,
-- KEYS[8] control HASH, KEYS[9] health HASH, KEYS[10] changes LIST,
-- KEYS[11] unrecorded ZSET
-- ARGV[1] now (unix ms)
--
-- Returns OK when deleted, SLOTS_IN_USE when a slot is held (nothing
-- changed), NO_EVENT when the event has no configuration.
if redis.call('EXISTS', KEYS[1]) == 0 then
  return NO_EVENT
end
redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', ARGV[1])
if redis.call('ZCARD', KEYS[3]) > 0 then
  return SLOTS_IN_USE
end
redis.call('DEL', unpack(KEYS))
return OK
