-- admission.lua: the admission step, admit(), the one way into a slot,
-- shared by tick.lua (the slot monitor), ingest.lua (the fast track) and
-- release.lua (a freed slot handed on): each of those scripts is
-- admission_keys.lua, adaptive.lua and this file followed by its own body,
-- so that every way into a slot keeps the same limits.

-- made_up returns rate raised to make up for the no-shows measured (an
-- event with arrivalSeconds: tick.lua frees their slots): once 20
-- admissions were resolved (arrived, or freed as no-shows), rate / (1 -
-- the no-show share), the share taken at most 0.5 (the rate at most
-- doubled). The capacity is not raised: holders never exceed it.
local function made_up(rate)
  local st = redis.call('HMGET', K.stats, 'arrivedTotal', 'noShowTotal')
  local arrived, missed = tonumber(st[1] or '0') or 0, tonumber(st[2] or '0') or 0
  if arrived + missed < 20 then
    return rate
  end
  return rate / (1 - math.min(missed / (arrived + missed), 0.5))
end

-- admit(event, now, batch, channel, record, call) expires holders whose stay
-- ended (score <= now), then, unless the event is paused, admits
-- min(capacity - holders, batch, rate budget) users from the head of the
-- line into holders with score now + staySeconds * 1000. Before
-- config.opensAt (a scheduled drop) nobody is admitted. For each admitted
-- user it sets the served mark in served: now, or the join's stamp when
-- later (clocks that disagree; for a drawn pre-queue place, whose score is
-- negative, opensAt - 1: every pre-queue join was stamped before it). Every
-- join stamped at or before it was sent before the admission: a replay, or
-- a retry of a join whose answer was lost; ingest.lua ignores them. It
-- forgets the presence; it adds them to
-- stats.admittedTotal, keeps the highest place score admitted in
-- stats.admittedMaxScore (what ingest.lua counts inversions against), counts
-- the admission's fairness figures (order_lib.lua's order_seat) and
-- publishes {"eventId","expiresAt","users":[…]} on channel (when not
-- empty) so that every gateway tells its sockets at once.
--
-- With record ('1': the caller records the admissions, writing them to
-- the log), each admitted user is also put in unrecorded (score now) and
-- nothing is published: the caller writes the records, then
-- mark_recorded.lua takes them out of unrecorded and publishes the notice.
-- Until then status.lua shows them no stay, so nobody holds an entry token
-- for an admission the log does not have. A holder still unrecorded when
-- its stay ends was never told of it, so the stay does not end: it keeps
-- its slot (counted in the capacity) until a monitor tick records it and
-- gives it a whole stay from then (tick.lua). An outage of the log longer
-- than a stay therefore spends nobody's turn; while it lasts, the slots
-- fill with admissions waiting to be told and admission stops by itself.
--
-- While the event is being rebuilt (config.rebuilding) nothing happens:
-- no stay ends, nobody is admitted.
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
-- bucket's (another gateway's clock) refills nothing. The cap holds for the
-- current rate: after the rate is lowered no step admits more than the new
-- burst.
--
-- An expired holder loses their item holds in the same step (hold_lib.lua's
-- end_holds): their unconfirmed items are free again.
--
-- The holders counted against the capacity are holders and freeing: a slot
-- released with record '1' is not free until its release record is in the
-- log (release.lua, mark_recorded.lua), or its stay would have ended (then
-- the log ends it by itself: the admit record's expiresAt). Otherwise a
-- successor's admit record could reach the log while the release record is
-- lost, and a rebuild would restore both holders.
--
-- Away (config away.keepSeconds set, queue.Away): a person at the head
-- whose presence in seen is a time older than now - stats.awayAfterMs (the
-- slot monitor's disconnect grace, tick.lua; 30 s until a tick wrote it)
-- is away. With call '1' (the monitor's tick) an away person popped from
-- the head is called instead of admitted: out of the line (the pop is
-- journaled as any), into called scored by the end of the claim window
-- (now + away.claimSeconds), the place they left in callplaces, a served
-- mark as an admission's (so the join that placed them is not taken
-- again), their presence forgotten; they take no slot and the step pops
-- on behind them (at most four pops a step). Without it (the fast track, a
-- release handing its slot on) an away person at the head ends the step's
-- admissions: the monitor's next tick calls them. Before the head, the
-- called people who came back within their window (claims, status.lua) are
-- admitted first, in line order, within the same room and rate; their
-- served mark is now. A turn claimed in time never lapses (away_lib.lua).
--
-- No-shows (config arrivalSeconds set): the rate is made up for the
-- no-shows measured (made_up, above); the capacity stays.
--
-- Returns nil when the event has no configuration, else expiresAt, the
-- users whose recorded stay ended (expired now; never an unrecorded one), the admitted users in
-- line order as a flat list of triples: user, place score, served mark, and
-- the number of item holds that ended with the expired users' slots, and
-- the people called, quads user, place score, end of the claim window,
-- served mark.
local function admit(event, now, batch, channel, record, call)
  local conf = redis.call('HMGET', K.config, 'capacity', 'staySeconds', 'state', 'admitPerMinute', 'opensAt',
    'adaptive.targetLatencyMs', 'adaptive.maxErrorRate', 'adaptive.maxLoad', 'adaptive.minAdmitPerMinute',
    'adaptive.startAdmitPerMinute', 'adaptive.increasePerStep', 'adaptive.decreaseFactor', 'adaptive.stepMs',
    'adaptive.signalTimeoutSeconds', 'adaptive.onSignalLoss', 'adaptive.maxSettleSeconds', 'rebuilding',
    'away.keepSeconds', 'away.claimSeconds', 'arrivalSeconds', 'holdSeconds', 'drawSource', 'drawnAt')
  if not conf[1] then
    return nil
  end
  -- holdSeconds: the older spelling of staySeconds, in configs stored before.
  local capacity, stay = tonumber(conf[1]), tonumber(conf[2] or conf[21])
  local opensAt = tonumber(conf[5] or '0') or 0
  if conf[22] and not conf[23] then
    -- A chain draw not yet drawn: the event has not opened.
    opensAt = math.max(opensAt, now + 1)
  end
  local expires = now + stay * 1000
  local expired, admitted, ended, calls = {}, {}, 0, {}
  if conf[17] then
    return expires, expired, admitted, ended, calls
  end
  -- A stay still unrecorded was never told: it does not end (its user
  -- keeps the slot until the stay is recorded, tick.lua, and then gets a
  -- whole stay).
  for _, user in ipairs(redis.call('ZRANGEBYSCORE', K.holders, '-inf', now)) do
    if not redis.call('ZSCORE', K.unrecorded, user) then
      redis.call('ZREM', K.holders, user)
      expired[#expired + 1] = user
      ended = ended + end_holds(K.holds, K.items, K.sold, user)
    end
  end
  -- A released slot whose release record is not yet in the log is still
  -- taken (freeing, release.lua), until its stay would have ended.
  redis.call('ZREMRANGEBYSCORE', K.freeing, '-inf', now)
  local holders = redis.call('ZCARD', K.holders) + redis.call('ZCARD', K.freeing)
  local room = math.min(capacity - holders, batch)
  local rate = tonumber(conf[4] or '0') or 0
  local adaptive = conf[6] ~= false
  if adaptive then
    rate = control(now, {
      target = tonumber(conf[6]), maxErrors = tonumber(conf[7]), maxLoad = tonumber(conf[8]),
      floor = tonumber(conf[9]), start = tonumber(conf[10]), increase = tonumber(conf[11]),
      factor = tonumber(conf[12]), step = tonumber(conf[13]), timeout = tonumber(conf[14]) * 1000,
      keep = conf[15] == 'keep', ceiling = rate, settle = math.min(stay, tonumber(conf[16])) * 1000,
    }, holders)
  end
  if rate > 0 and (tonumber(conf[20] or '0') or 0) > 0 then
    rate = made_up(rate)
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
      tokens, at = tokens + (now - at) * rate / 60000, now
    end
    -- Capped on every step, not only on a refill: after the rate was
    -- lowered, tokens the old rate left must not outlast its burst, also
    -- when this step's clock is at or behind the last admitter's.
    tokens = math.min(burst, tokens)
    n = math.min(n, math.floor(tokens))
  end
  if adaptive and n < room and conf[3] ~= 'paused' and now >= opensAt and redis.call('ZCARD', K.waiting) > n then
    redis.call('HSET', K.control, 'limited', '1')
  end
  if n <= 0 then
    return expires, expired, admitted, ended, calls
  end
  local top
  local users = {}
  -- The served mark of a place left at score: the admission's (or call's)
  -- time, or the join's stamp if the clocks disagree and it is later.
  local function served_mark(score)
    if score < 0 then
      return math.max(opensAt - 1, now)
    end
    return math.max(score, now)
  end
  local function seat(user, score, served)
    redis.call('ZADD', K.holders, expires, user)
    redis.call('ZADD', K.served, served, user)
    redis.call('ZREM', K.seen, user)
    if record == '1' then
      redis.call('ZADD', K.unrecorded, now, user)
    end
    users[#users + 1] = user
    admitted[#admitted + 1] = user
    admitted[#admitted + 1] = score
    admitted[#admitted + 1] = served
    order_seat(user, score, now, opensAt)
    n = n - 1
  end
  local keep = tonumber(conf[18] or '')
  if keep then
    claim_turns(n, now, seat)
  end
  local awayBefore = keep and now - (tonumber(redis.call('HGET', K.stats, 'awayAfterMs') or '') or 30000)
  for _ = 1, 4 do
    if n <= 0 then
      break
    end
    local asked = n
    local heads = redis.call('ZRANGE', K.waiting, 0, asked - 1, 'WITHSCORES')
    local away, k, stop = {}, 0, false
    for i = 1, #heads, 2 do
      local seen = awayBefore and tonumber(redis.call('ZSCORE', K.seen, heads[i]) or '')
      if seen and seen < ATTACHED_BASE and seen < awayBefore then
        if call ~= '1' then
          stop = true
          break
        end
        away[heads[i]] = true
      end
      k = k + 1
    end
    if k > 0 then
      local popped = redis.call('ZPOPMIN', K.waiting, k)
      journal_note('p' .. (#popped / 2) .. ' ', popped[#popped], popped[#popped - 1])
      for i = 1, #popped, 2 do
        local user, score = popped[i], tonumber(popped[i + 1])
        if away[user] then
          call_turn(now, user, popped[i + 1], served_mark(score), tonumber(conf[19]), calls)
        else
          top = score
          seat(user, score, served_mark(score))
        end
      end
    end
    if stop or #heads < 2 * asked then
      break -- an away person ends the fast track's run; or the line is done
    end
  end
  journal_flush(K.journal)
  if #users > 0 then
    redis.call('HINCRBY', K.stats, 'admittedTotal', #users)
    order_flush()
    local best = tonumber(redis.call('HGET', K.stats, 'admittedMaxScore') or '')
    if top and (not best or top > best) then
      redis.call('HSET', K.stats, 'admittedMaxScore', string.format('%d', top))
    end
    if tokens then
      redis.call('HSET', K.stats, 'tokens', string.format('%.17g', tokens - #users), 'tokensAt', string.format('%d', at))
    end
    if channel ~= '' and record ~= '1' then
      redis.call('PUBLISH', channel, cjson.encode({eventId = event, expiresAt = expires, users = users}))
    end
  end
  return expires, expired, admitted, ended, calls
end
