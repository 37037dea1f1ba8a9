-- line_lib.lua: what status.lua and line.lua both read of an event.
--
-- line_head(now, waiting, active, stats, config, control, called) returns
-- the event's head {total waiting, admittedTotal, rate, opensAt (a chain
-- draw not yet drawn: now + 1, not opened), rebuilding
-- (1 or 0), capacity, stay (ms; staySeconds, or its older spelling holdSeconds), called (their turns waiting for them),
-- calledTotal, claimedTotal, lapsedTotal (away_lib.lua)}, where rate is an adaptive event's effective
-- rate (control.effective, users a minute), NONE for an event with a fixed
-- rate or a controller that has not run yet; then ended, the holds of
-- active ending at or before now, and holders, the others.
local function line_head(now, waiting, active, stats, config, control, called)
  local conf = redis.call('HMGET', config, 'opensAt', 'adaptive.targetLatencyMs', 'rebuilding', 'capacity', 'staySeconds', 'holdSeconds', 'drawSource', 'drawnAt')
  local opensAt = tonumber(conf[1] or '0') or 0
  if conf[7] and not conf[8] then
    -- A chain draw not yet drawn: told as before the opening.
    opensAt = math.max(opensAt, now + 1)
  end
  local rate = NONE
  if conf[2] then
    rate = tonumber(redis.call('HGET', control, 'effective') or '') or NONE
  end
  local ended = redis.call('ZCOUNT', active, '-inf', now)
  local holders = redis.call('ZCARD', active) - ended
  local counts = redis.call('HMGET', stats, 'admittedTotal', 'calledTotal', 'claimedTotal', 'lapsedTotal')
  local head = {
    redis.call('ZCARD', waiting), tonumber(counts[1] or '0'), rate,
    opensAt, conf[3] and 1 or 0,
    tonumber(conf[4] or '0') or 0, 1000 * (tonumber(conf[5] or conf[6] or '0') or 0),
    redis.call('ZCARD', called), tonumber(counts[2] or '0'), tonumber(counts[3] or '0'), tonumber(counts[4] or '0'),
  }
  return head, ended, holders
end
