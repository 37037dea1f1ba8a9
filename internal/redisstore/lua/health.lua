-- health.lua: keep one reporter's latest health report of an event.
--
-- KEYS[1] config HASH, KEYS[2] health HASH, KEYS[3] control HASH
-- ARGV[1] now (unix ms), ARGV[2] reporter name, ARGV[3] the report (JSON
-- of queue.ReporterHealth: its figures and "at", the time it was received)
-- ARGV[4] the most reporters an event keeps, ARGV[5] how old (ms) a
-- reporter's report may grow before it is dropped to make room for a new
-- reporter
--
-- Writes health[reporter] = the report and control.signalAt = now (the
-- newest report, what adaptive.lua's controller times the signal by).
-- Returns OK, NO_EVENT when the event has no configuration,
-- TOO_MANY_REPORTERS when a new reporter finds the event with the most
-- reporters, none of them stale.
if redis.call('EXISTS', KEYS[1]) == 0 then
  return NO_EVENT
end
local now, max = tonumber(ARGV[1]), tonumber(ARGV[4])
if redis.call('HEXISTS', KEYS[2], ARGV[2]) == 0 and redis.call('HLEN', KEYS[2]) >= max then
  local all = redis.call('HGETALL', KEYS[2])
  for i = 1, #all, 2 do
    if now - cjson.decode(all[i + 1]).at > tonumber(ARGV[5]) then
      redis.call('HDEL', KEYS[2], all[i])
    end
  end
  if redis.call('HLEN', KEYS[2]) >= max then
    return TOO_MANY_REPORTERS
  end
end
redis.call('HSET', KEYS[2], ARGV[2], ARGV[3])
if now > (tonumber(redis.call('HGET', KEYS[3], 'signalAt') or '0') or 0) then
  redis.call('HSET', KEYS[3], 'signalAt', ARGV[1])
end
return OK
