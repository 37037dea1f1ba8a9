-- adaptive.lua: the adaptive controller, which sets an adaptive event's
-- rate from its shop's health reports. Not run alone: part of the
-- admission step (after admission_keys.lua, before admission.lua, whose
-- admit() calls control() in the same atomic step as the admissions it
-- limits). It uses the admission keys control, health and changes (K).

-- The latest rate changes kept in the changes list.
local MAX_CHANGES = 50

-- change notes a change of the effective rate: on the changes list
-- (newest first, at most MAX_CHANGES) and as control.reason/detail/changedAt.
local function change(now, from, to, reason, detail)
  redis.call('LPUSH', K.changes, cjson.encode({at = now, from = from, to = to, reason = reason, detail = detail}))
  redis.call('LTRIM', K.changes, 0, MAX_CHANGES - 1)
  redis.call('HSET', K.control, 'reason', reason, 'detail', detail, 'changedAt', now, 'effective', to)
end

-- signal combines the reports received since now - timeout: the highest
-- p95 and load of any reporter, the error share over all their requests,
-- the longest window and the requests summed. A report with requests = 0
-- has no latency or error figure to give. Returns nil when no report is
-- that recent.
local function signal(now, timeout)
  local all = redis.call('HGETALL', K.health)
  local s, errs, weight = {reporters = 0, windowMs = 0}, 0, 0
  for i = 2, #all, 2 do
    local r = cjson.decode(all[i])
    if now - r.at <= timeout then
      s.reporters = s.reporters + 1
      s.windowMs = math.max(s.windowMs, r.windowMs or 0)
      local n = r.requests
      if n then
        s.requests = (s.requests or 0) + n
      end
      if n == nil or n > 0 then
        if r.p95Ms then
          s.p95Ms = math.max(s.p95Ms or 0, r.p95Ms)
        end
        if r.errorRate then
          errs, weight = errs + r.errorRate * (n or 1), weight + (n or 1)
        end
      end
      if r.load then
        s.load = math.max(s.load or 0, r.load)
      end
    end
  end
  if s.reporters == 0 then
    return nil
  end
  if weight > 0 then
    s.errorRate = errs / weight
  end
  return s
end

-- control runs the adaptive controller of an event whose settings are a
-- (from the config: target, maxErrors, maxLoad, floor, start, increase,
-- factor, step, timeout (ms), keep, ceiling, settle (ms): the longest an
-- increase waits, the hold or maxSettleSeconds) and returns the
-- effective rate (users a minute; 0: admit nobody). Its state is the
-- control hash; holders is the number of slots held now.
--
-- The signal is lost when the newest report (control.signalAt, written by
-- health.lua) is older than the timeout: admission stops (effective 0) or,
-- with keep, goes on at the last rate; when reports come back it resumes at
-- the rate it had. Otherwise, at most once a step and only for a report
-- newer than the last step's, the rule is AIMD:
--   - over a limit (errors, then p95 latency, then load): the rate is
--     multiplied by the factor (never below the floor), at most once per
--     max(step, the reports' window), so that one spell of evidence counts
--     once; the doubling phase ends;
--   - healthy, and the rate was what held admission back since the last
--     step (control.limited, set by admit()): the rate doubles while in the
--     start phase (up to the rate of the last decrease, ssthresh) and grows
--     by the increase after it, never above the ceiling. An increase waits
--     until the users of the last change had time to weigh on the shop: the
--     time a slot is held on average at this rate (holders / rate, Little's
--     law), at least one step and at most a.settle.
local function control(now, a, holders)
  local st = redis.call('HMGET', K.control, 'rate', 'ssthresh', 'phase', 'effective', 'stepAt', 'usedAt',
    'decreasedAt', 'rateAt', 'limited', 'lost', 'signalAt')
  local rate, effective = tonumber(st[1]), tonumber(st[4])
  if not rate then
    rate, effective = a.start, a.start
    redis.call('HSET', K.control, 'rate', rate, 'ssthresh', a.ceiling, 'phase', 'start', 'rateAt', now, 'lost', '0')
    change(now, 0, rate, 'start', string.format('adaptive admission starts at %d a minute', rate))
  end
  local bounded = math.max(a.floor, math.min(rate, a.ceiling))
  if bounded ~= rate then
    redis.call('HSET', K.control, 'rate', bounded, 'rateAt', now)
    if st[10] ~= '1' or a.keep then
      change(now, rate, bounded, 'ceiling', string.format('the bounds are now %d to %d a minute', a.floor, a.ceiling))
      effective = bounded
    end
    rate = bounded
  end
  local signalAt = tonumber(st[11]) or 0
  if signalAt == 0 or now - signalAt > a.timeout then
    if st[10] ~= '1' then
      redis.call('HSET', K.control, 'lost', '1')
      local to = 0
      if a.keep then
        to = rate
      else
        redis.call('HINCRBY', K.control, 'stops', 1)
      end
      local why = 'no health report yet'
      if signalAt > 0 then
        why = string.format('no health report for %d s', math.floor((now - signalAt) / 1000))
      end
      if a.keep then
        why = why .. '; keeping the last rate'
      end
      change(now, effective or 0, to, 'no_signal', why)
      effective = to
    end
    return effective
  end
  if st[10] == '1' then
    redis.call('HSET', K.control, 'lost', '0')
    change(now, effective or 0, rate, 'signal_back', string.format('health reports again; admitting %d a minute', rate))
    effective = rate
  end
  if now - (tonumber(st[5]) or 0) < a.step or signalAt <= (tonumber(st[6]) or 0) then
    return effective
  end
  redis.call('HSET', K.control, 'stepAt', now, 'usedAt', signalAt, 'limited', '0')
  local s = signal(now, a.timeout)
  if not s then
    return effective
  end
  redis.call('HSET', K.control, 'signal', cjson.encode(s), 'signalStepAt', now)
  local reason, detail
  if s.errorRate and s.errorRate > a.maxErrors then
    reason = 'errors'
    detail = string.format('%.1f%% of requests failed, over %.1f%%', s.errorRate * 100, a.maxErrors * 100)
  elseif s.p95Ms and s.p95Ms > a.target then
    reason = 'latency'
    detail = string.format('p95 %d ms, over the target %d ms', math.floor(s.p95Ms + 0.5), a.target)
  elseif s.load and s.load > a.maxLoad then
    reason = 'load'
    detail = string.format('load %.2f, over %.2f', s.load, a.maxLoad)
  end
  local to, phase, ssthresh = rate, st[3], tonumber(st[2]) or a.ceiling
  if reason then
    if now - (tonumber(st[7]) or 0) < math.max(a.step, s.windowMs) then
      return effective
    end
    to = math.max(a.floor, math.floor(rate * a.factor))
    ssthresh, phase = to, 'steady'
    redis.call('HSET', K.control, 'decreasedAt', now)
  else
    if st[9] ~= '1' then
      return effective
    end
    local settle = a.step
    if rate > 0 then
      settle = math.min(math.max(a.step, holders * 60000 / rate), a.settle)
    end
    if now - (tonumber(st[8]) or 0) < settle then
      return effective
    end
    if phase == 'start' then
      to = math.max(rate * 2, rate + a.increase)
      if to >= ssthresh then
        to, phase = ssthresh, 'steady'
      end
    else
      to = rate + a.increase
    end
    to = math.min(to, a.ceiling)
    if to <= rate then
      return effective
    end
    reason = 'healthy'
    local figures = {}
    if s.p95Ms then
      figures[#figures + 1] = string.format('p95 %d ms', math.floor(s.p95Ms + 0.5))
    end
    if s.errorRate then
      figures[#figures + 1] = string.format('%.1f%% errors', s.errorRate * 100)
    end
    if s.load then
      figures[#figures + 1] = string.format('load %.2f', s.load)
    end
    if #figures == 0 then
      figures[1] = 'no traffic measured'
    end
    detail = table.concat(figures, ', ') .. '; the rate was in use'
  end
  redis.call('HSET', K.control, 'rate', to, 'ssthresh', ssthresh, 'phase', phase, 'rateAt', now)
  if to ~= rate then
    if to > rate then
      redis.call('HINCRBY', K.control, 'increases', 1)
    else
      redis.call('HINCRBY', K.control, 'decreases', 1)
    end
    change(now, rate, to, reason, detail)
  end
  return to
end

