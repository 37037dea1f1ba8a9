-- admission.lua: the one admission step, shared by admit.lua, ingest.lua
-- and release.lua (each of those scripts is this file followed by its own
-- body), so that every path into a slot keeps the same limits.
--
-- admit(k, event, now, batch, channel) with k = {config, waiting, active,
-- stats, seen, served} (key names) drops holders whose hold ended
-- (score <= now), then, unless the event is paused, admits
-- min(capacity - holders, batch, rate budget) users from the head of the
-- line into active with score now + holdSeconds * 1000. Before
-- config.opensAt (a scheduled drop) nobody is admitted. For each admitted
-- user it records the stamp of the join in served (for a drawn pre-queue
-- place, whose score is negative, opensAt - 1: every pre-queue join was
-- stamped before it) and forgets the presence; it adds them to
-- stats.admittedTotal, keeps the highest place score admitted in
-- stats.admittedMaxScore (what ingest.lua counts inversions against) and
-- publishes
-- {"eventId","expiresAt","users":[…]} on channel (when not empty) so that
-- every gateway tells its sockets at once.
--
-- The rate budget is a token bucket kept in stats (tokens, tokensAt) when
-- config.admitPerMinute > 0: it refills at admitPerMinute per minute from
-- the "now" passed in, holds at most burst = max(1, ceil(admitPerMinute /
-- 12)) tokens (5 s of the rate), starts full, and each admission takes one.
-- In any window of W minutes at most admitPerMinute * W + burst users are
-- admitted. A "now" older than the bucket's (another gateway's clock)
-- refills nothing.
--
-- Returns nil when the event has no configuration, else expiresAt, the
-- number of holders dropped, and the list of admitted users in line order.
local function admit(k, event, now, batch, channel)
  local conf = redis.call('HMGET', k.config, 'capacity', 'holdSeconds', 'state', 'admitPerMinute', 'opensAt')
  if not conf[1] then
    return nil
  end
  local capacity, hold = tonumber(conf[1]), tonumber(conf[2])
  local opensAt = tonumber(conf[5] or '0') or 0
  local expires = now + hold * 1000
  local dropped = redis.call('ZREMRANGEBYSCORE', k.active, '-inf', now)
  local n = math.min(capacity - redis.call('ZCARD', k.active), batch)
  if conf[3] == 'paused' or now < opensAt then
    n = 0
  end
  local rate = tonumber(conf[4] or '0') or 0
  local tokens, at
  if rate > 0 and n > 0 then
    local burst = math.max(1, math.ceil(rate / 12))
    local bucket = redis.call('HMGET', k.stats, 'tokens', 'tokensAt')
    tokens, at = tonumber(bucket[1]) or burst, tonumber(bucket[2]) or now
    if now > at then
      tokens, at = math.min(burst, tokens + (now - at) * rate / 60000), now
    end
    n = math.min(n, math.floor(tokens))
  end
  local admitted = {}
  if n <= 0 then
    return expires, dropped, admitted
  end
  local popped = redis.call('ZPOPMIN', k.waiting, n)
  local top
  for i = 1, #popped, 2 do
    local user, score = popped[i], tonumber(popped[i + 1])
    top = score
    if score < 0 then
      score = opensAt - 1
    end
    redis.call('ZADD', k.active, expires, user)
    redis.call('ZADD', k.served, score, user)
    redis.call('ZREM', k.seen, user)
    admitted[#admitted + 1] = user
  end
  if #admitted > 0 then
    redis.call('HINCRBY', k.stats, 'admittedTotal', #admitted)
    local best = tonumber(redis.call('HGET', k.stats, 'admittedMaxScore') or '')
    if not best or top > best then
      redis.call('HSET', k.stats, 'admittedMaxScore', string.format('%d', top))
    end
    if tokens then
      redis.call('HSET', k.stats, 'tokens', string.format('%.17g', tokens - #admitted), 'tokensAt', string.format('%d', at))
    end
    if channel ~= '' then
      redis.call('PUBLISH', channel, cjson.encode({eventId = event, expiresAt = expires, users = admitted}))
    end
  end
  return expires, dropped, admitted
end

