-- arrive.lua: an admitted person arrived at the shop (their first request
-- with the entry token, reported by the guard, the middleware or
-- forward-auth): their admission is not a no-show (tick.lua frees the
-- slots of those who do not arrive within the event's arrivalSeconds).
--
-- KEYS[1] config HASH, KEYS[2] active ZSET, KEYS[3] unrecorded ZSET,
-- KEYS[4] arrived ZSET (user -> the end of the hold they arrived for),
-- KEYS[5] stats HASH
-- ARGV[1] userId, ARGV[2] the end of the hold the token names (exp_ms,
-- unix ms), ARGV[3] now (unix ms)
--
-- Marks the arrival only for the user's current admission: their active
-- score equal to the token's end, after now, and recorded (a token is only
-- signed for a recorded hold). A token of an earlier admission, a released
-- or ended one, changes nothing: a forged or stale report cannot keep a
-- no-show's slot. The first report of an admission counts once in
-- stats.arrivedTotal.
--
-- Returns 1 arrived now, 2 arrived before (nothing changed), 0 not the
-- user's current admission (nothing changed); NO_EVENT without a
-- configuration, REBUILDING while the event is rebuilt.
if redis.call('EXISTS', KEYS[1]) == 0 then
  return NO_EVENT
end
if redis.call('HEXISTS', KEYS[1], 'rebuilding') == 1 then
  return REBUILDING
end
local stay = tonumber(redis.call('ZSCORE', KEYS[2], ARGV[1]) or '')
local want, now = tonumber(ARGV[2]), tonumber(ARGV[3])
if not stay or stay ~= want or stay <= now or redis.call('ZSCORE', KEYS[3], ARGV[1]) then
  return 0
end
if tonumber(redis.call('ZSCORE', KEYS[4], ARGV[1]) or '') == stay then
  return 2
end
redis.call('ZADD', KEYS[4], stay, ARGV[1])
redis.call('HINCRBY', KEYS[5], 'arrivedTotal', 1)
return 1
