-- admit.lua: the slot monitor's admission round for one event (after
-- admission.lua, which it is run behind).
--
-- KEYS[1..10] the admission keys (admission.lua)
-- ARGV[1] now (unix ms)
-- ARGV[2] batch: the most users one call admits
-- ARGV[3] event id, ARGV[4] the admissions channel ('' : publish nothing)
-- ARGV[5] journal: '1' when the caller writes the admissions to the log
-- (admission.lua), else '0'
-- ARGV[6] stale cutoff (unix ms): holders still unlogged since before it
-- were admitted by a caller that died before writing them to the log; they
-- are returned for this caller to write (and stamped now in unlogged, so
-- that another monitor does not write them too before the cutoff passes
-- again); 0: none
--
-- Runs admit() (admission.lua): atomic, so any number of gateways may call
-- it at once: holders never exceed capacity, admissions never exceed the
-- rate.
--
-- Returns {expiresAt, holders, waiting, admitted, dropped, stale} (holders
-- and waiting after the admission): admitted a flat list of triples user,
-- place score, served mark; dropped the users whose logged hold ended;
-- stale a flat list of triples user, end of hold, served mark. -1 when the
-- event has no configuration.
local now = tonumber(ARGV[1])
local expires, dropped, admitted = admit(ARGV[3], now, tonumber(ARGV[2]), ARGV[4], ARGV[5])
if not expires then
  return -1
end
local stale = {}
local cutoff = tonumber(ARGV[6])
if cutoff > 0 then
  for _, user in ipairs(redis.call('ZRANGEBYSCORE', K.unlogged, '-inf', cutoff, 'LIMIT', 0, 1000)) do
    local hold = tonumber(redis.call('ZSCORE', K.active, user) or '')
    local served = redis.call('ZSCORE', K.served, user)
    if hold and hold > now and served then
      redis.call('ZADD', K.unlogged, now, user)
      stale[#stale + 1] = user
      stale[#stale + 1] = hold
      stale[#stale + 1] = tonumber(served)
    else
      redis.call('ZREM', K.unlogged, user)
    end
  end
end
return {expires, redis.call('ZCARD', K.active), redis.call('ZCARD', K.waiting), admitted, dropped, stale}
