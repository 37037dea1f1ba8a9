-- admission.lua: the one admission step, shared by admit.lua, ingest.lua
-- and release.lua (each of those scripts is this file followed by its own
-- body), so that every path into a slot keeps the same limits.
--
-- Those scripts take the admission keys first, in this order:
-- KEYS[1] config HASH, KEYS[2] waiting ZSET, KEYS[3] active ZSET,
-- KEYS[4] stats HASH, KEYS[5] seen ZSET, KEYS[6] served ZSET,
-- KEYS[7] control HASH, KEYS[8] health HASH, KEYS[9] changes LIST,
-- KEYS[10] unlogged ZSET
local K = {
  config = KEYS[1], waiting = KEYS[2], active = KEYS[3], stats = KEYS[4], seen = KEYS[5], served = KEYS[6],
  control = KEYS[7], health = KEYS[8], changes = KEYS[9], unlogged = KEYS[10],
}

-- The latest rate changes kept in the changes list.
local MAX_CHANGES = 50

-- change records a change of the effective rate: on the changes list
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

-- admit(event, now, batch, channel, journal) drops holders whose hold
-- ended (score <= now), then, unless the event is paused, admits
-- min(capacity - holders, batch, rate budget) users from the head of the
-- line into active with score now + holdSeconds * 1000. Before
-- config.opensAt (a scheduled drop) nobody is admitted. For each admitted
-- user it records the served mark in served: now, or the join's stamp when
-- later (clocks that disagree; for a drawn pre-queue place, whose score is
-- negative, opensAt - 1: every pre-queue join was stamped before it). Every
-- join stamped at or before it was sent before the admission: a replay, or
-- a retry of a join whose answer was lost; ingest.lua ignores them. It
-- forgets the presence; it adds them to
-- stats.admittedTotal, keeps the highest place score admitted in
-- stats.admittedMaxScore (what ingest.lua counts inversions against) and
-- publishes {"eventId","expiresAt","users":[…]} on channel (when not
-- empty) so that every gateway tells its sockets at once.
--
-- With journal ('1': the caller writes the admissions to the log), each
-- admitted user is also put in unlogged (score now) and nothing is
-- published: the caller writes the records, then mark_logged.lua takes
-- them out of unlogged and publishes the notice. Until then status.lua
-- shows them no hold, so nobody holds an entry token for an admission the
-- log does not have. A holder still unlogged when its hold ends was never
-- logged: it is dropped without an expiry to record.
--
-- While the event is being rebuilt (config.rebuilding) nothing happens:
-- no hold is dropped, nobody is admitted.
--
-- The rate is config.admitPerMinute, or for an adaptive event (config
-- adaptive.targetLatencyMs set) the effective rate control() returns, 0
-- then admitting nobody; when that rate is what held admission back (room
-- and people waiting, no tokens) control.limited is set, what an increase
-- needs. The rate budget is a token bucket kept in stats (tokens,
-- tokensAt): it refills at the rate per minute from the "now" passed in,
-- holds at most burst = max(1, ceil(rate / 12)) tokens (5 s of the rate),
-- starts full, and each admission takes one. In any window of W minutes
-- at most rate * W + burst users are admitted. A "now" older than the
-- bucket's (another gateway's clock) refills nothing.
--
-- Returns nil when the event has no configuration, else expiresAt, the
-- users whose logged hold ended (dropped now), and the admitted users in
-- line order as a flat list of triples: user, place score, served mark.
local function admit(event, now, batch, channel, journal)
  local conf = redis.call('HMGET', K.config, 'capacity', 'holdSeconds', 'state', 'admitPerMinute', 'opensAt',
    'adaptive.targetLatencyMs', 'adaptive.maxErrorRate', 'adaptive.maxLoad', 'adaptive.minAdmitPerMinute',
    'adaptive.startAdmitPerMinute', 'adaptive.increasePerStep', 'adaptive.decreaseFactor', 'adaptive.stepMs',
    'adaptive.signalTimeoutSeconds', 'adaptive.onSignalLoss', 'adaptive.maxSettleSeconds', 'rebuilding')
  if not conf[1] then
    return nil
  end
  local capacity, hold = tonumber(conf[1]), tonumber(conf[2])
  local opensAt = tonumber(conf[5] or '0') or 0
  local expires = now + hold * 1000
  local dropped, admitted = {}, {}
  if conf[17] then
    return expires, dropped, admitted
  end
  for _, user in ipairs(redis.call('ZRANGEBYSCORE', K.active, '-inf', now)) do
    if redis.call('ZREM', K.unlogged, user) == 0 then
      dropped[#dropped + 1] = user
    end
  end
  redis.call('ZREMRANGEBYSCORE', K.active, '-inf', now)
  local holders = redis.call('ZCARD', K.active)
  local room = math.min(capacity - holders, batch)
  local rate = tonumber(conf[4] or '0') or 0
  local adaptive = conf[6] ~= false
  if adaptive then
    rate = control(now, {
      target = tonumber(conf[6]), maxErrors = tonumber(conf[7]), maxLoad = tonumber(conf[8]),
      floor = tonumber(conf[9]), start = tonumber(conf[10]), increase = tonumber(conf[11]),
      factor = tonumber(conf[12]), step = tonumber(conf[13]), timeout = tonumber(conf[14]) * 1000,
      keep = conf[15] == 'keep', ceiling = rate, settle = math.min(hold, tonumber(conf[16])) * 1000,
    }, holders)
  end
  local n = room
  if conf[3] == 'paused' or now < opensAt then
    n = 0
  end
  local tokens, at
  if adaptive and rate <= 0 then
    n = 0
  elseif rate > 0 and n > 0 then
    local burst = math.max(1, math.ceil(rate / 12))
    local bucket = redis.call('HMGET', K.stats, 'tokens', 'tokensAt')
    tokens, at = tonumber(bucket[1]) or burst, tonumber(bucket[2]) or now
    if now > at then
      tokens, at = math.min(burst, tokens + (now - at) * rate / 60000), now
    end
    n = math.min(n, math.floor(tokens))
  end
  if adaptive and n < room and conf[3] ~= 'paused' and now >= opensAt and redis.call('ZCARD', K.waiting) > n then
    redis.call('HSET', K.control, 'limited', '1')
  end
  if n <= 0 then
    return expires, dropped, admitted
  end
  local popped = redis.call('ZPOPMIN', K.waiting, n)
  local top
  local users = {}
  for i = 1, #popped, 2 do
    local user, score = popped[i], tonumber(popped[i + 1])
    top = score
    -- The served mark: the admission's time, or the join's stamp if the
    -- clocks disagree and it is later.
    local served = math.max(score, now)
    if score < 0 then
      served = math.max(opensAt - 1, now)
    end
    redis.call('ZADD', K.active, expires, user)
    redis.call('ZADD', K.served, served, user)
    redis.call('ZREM', K.seen, user)
    if journal == '1' then
      redis.call('ZADD', K.unlogged, now, user)
    end
    users[#users + 1] = user
    admitted[#admitted + 1] = user
    admitted[#admitted + 1] = score
    admitted[#admitted + 1] = served
  end
  if #users > 0 then
    redis.call('HINCRBY', K.stats, 'admittedTotal', #users)
    local best = tonumber(redis.call('HGET', K.stats, 'admittedMaxScore') or '')
    if not best or top > best then
      redis.call('HSET', K.stats, 'admittedMaxScore', string.format('%d', top))
    end
    if tokens then
      redis.call('HSET', K.stats, 'tokens', string.format('%.17g', tokens - #users), 'tokensAt', string.format('%d', at))
    end
    if channel ~= '' and journal ~= '1' then
      redis.call('PUBLISH', channel, cjson.encode({eventId = event, expiresAt = expires, users = users}))
    end
  end
  return expires, dropped, admitted
end
