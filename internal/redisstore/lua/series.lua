-- series.lua: the sample of an event's series for the period now falls
-- in, taken by the first caller of the period (the slot monitor of any
-- gateway): one writer per period, the others read one ZCOUNT. Run behind
-- admission_keys.lua and adaptive.lua (scripts.go), whose signal()
-- combines the health reports as the adaptive controller does.
--
-- KEYS: the admission keys (admission_keys.lua; this script reads config,
-- waiting, holders, stats, control and health), then, last, the series ZSET
-- ARGV[1] now (unix ms), ARGV[2] period (ms), ARGV[3] span (ms),
-- ARGV[4] signal timeout of an event without adaptive admission (ms)
--
-- The series ZSET holds one member per period: the sample's JSON
-- ({"at","state","waiting","holders","capacity","admittedTotal",
-- "admitPerMinute","p95Ms","errorRate","load","targetLatencyMs",
-- "maxErrorRate"}, absent figures left out), scored by the period's start
-- (at). Samples at or before now - span are removed, and the key expires a
-- span after the last sample (an event nobody samples any more leaves
-- nothing behind).
--
-- Returns 1 when it took the sample, 0 when the period had one already or
-- the event has no configuration (deleted, or being rebuilt).
local S = KEYS[#KEYS]
local now, period, span = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local at = now - now % period
if redis.call('ZCOUNT', S, at, at) > 0 then
  return 0
end
local conf = redis.call('HMGET', K.config, 'capacity', 'admitPerMinute', 'state',
  'adaptive.targetLatencyMs', 'adaptive.maxErrorRate', 'adaptive.signalTimeoutSeconds')
if not conf[1] then
  return 0
end
local sample = {
  at = at,
  state = conf[3],
  waiting = redis.call('ZCARD', K.waiting),
  holders = redis.call('ZCOUNT', K.holders, '(' .. now, '+inf'),
  capacity = tonumber(conf[1]),
  admittedTotal = tonumber(redis.call('HGET', K.stats, 'admittedTotal') or '0'),
}
local timeout = tonumber(ARGV[4])
if conf[4] then
  sample.targetLatencyMs = tonumber(conf[4])
  sample.maxErrorRate = tonumber(conf[5])
  timeout = 1000 * (tonumber(conf[6]) or timeout / 1000)
  sample.admitPerMinute = tonumber(redis.call('HGET', K.control, 'effective') or '')
elseif (tonumber(conf[2]) or 0) > 0 then
  sample.admitPerMinute = tonumber(conf[2])
end
local s = signal(now, timeout)
if s then
  sample.p95Ms, sample.errorRate, sample.load = s.p95Ms, s.errorRate, s.load
end
redis.call('ZADD', S, at, cjson.encode(sample))
redis.call('ZREMRANGEBYSCORE', S, '-inf', now - span)
redis.call('PEXPIRE', S, span + period)
return 1
