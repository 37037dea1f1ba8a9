-- line_lib.lua: what status.lua and line.lua both read of an event.
--
-- line_head(now, waiting, holders_set, stats, config, control) returns the
-- event's head {total waiting, admittedTotal, rate, opensAt, rebuilding (1
-- or 0), capacity, hold (ms)}, where rate is an adaptive event's effective
-- rate (control.effective, users a minute), NONE for an event with a fixed
-- rate or a controller that has not run yet; then ended, the holds of
-- holders_set ending at or before now, and holders, the others.
local function line_head(now, waiting, holders_set, stats, config, control)
  local conf = redis.call('HMGET', config, 'opensAt', 'adaptive.targetLatencyMs', 'rebuilding', 'capacity', 'staySeconds', 'holdSeconds')
  local rate = NONE
  if conf[2] then
    rate = tonumber(redis.call('HGET', control, 'effective') or '') or NONE
  end
  local ended = redis.call('ZCOUNT', holders_set, '-inf', now)
  local holders = redis.call('ZCARD', holders_set) - ended
  local head = {
    redis.call('ZCARD', waiting), tonumber(redis.call('HGET', stats, 'admittedTotal') or '0'), rate,
    tonumber(conf[1] or '0') or 0, conf[3] and 1 or 0,
    tonumber(conf[4] or '0') or 0, 1000 * (tonumber(conf[5] or conf[6] or '0') or 0),
  }
  return head, ended, holders
end
