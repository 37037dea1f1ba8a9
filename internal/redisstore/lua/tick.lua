-- tick.lua: the slot monitor's tick for one event: the admission step, then
-- the admissions left unrecorded (after the admission step, which it is run
-- behind: admission_keys.lua, hold_lib.lua, adaptive.lua,
-- admission.lua).
--
-- KEYS[1..15] the admission keys (admission_keys.lua)
-- ARGV[1] now (unix ms)
-- ARGV[2] batch: the most users one call admits
-- ARGV[3] event id, ARGV[4] the admissions channel ('' : publish nothing)
-- ARGV[5] record: '1' when the caller records the admissions (writes them
-- to the log, admission.lua), else '0'
-- ARGV[6] stale cutoff (unix ms): holders still unrecorded since before it
-- were admitted by a caller that died before recording them, or whose
-- write failed (no broker answered); they are returned for this caller to
-- record (and stamped now in unrecorded, so that another monitor does not
-- record them too before the cutoff passes again), each with a whole stay
-- from now (holders re-scored now + staySeconds): their users hear of the
-- admission only once it is recorded, so the stay runs from then, however
-- long the log was out (an unrecorded stay never ends, admission.lua);
-- likewise the released slots in freeing released before it, whose
-- release record was never acknowledged: returned for this caller to
-- record, restamped now (release.lua); 0: none
--
-- Runs admit() (admission.lua): atomic, so any number of gateways may call
-- it at once: holders never exceed capacity, admissions never exceed the
-- rate.
--
-- Returns {expiresAt, holders, waiting, admitted, expired, stale, ended,
-- freeing} (holders and waiting after the admission): admitted a flat list
-- of triples user, place score, served mark; expired the users whose
-- recorded stay ended; stale a flat list of triples user, end of stay
-- (renewed), served mark; ended the item holds that ended with the expired
-- users' slots (admit()); freeing the restamped members of the releases
-- to record again. NO_EVENT when the event has no configuration.
local now = tonumber(ARGV[1])
local expires, expired, admitted, ended = admit(ARGV[3], now, tonumber(ARGV[2]), ARGV[4], ARGV[5])
if not expires then
  return NO_EVENT
end
local stale = {}
local cutoff = tonumber(ARGV[6])
if cutoff > 0 then
  for _, user in ipairs(redis.call('ZRANGEBYSCORE', K.unrecorded, '-inf', cutoff, 'LIMIT', 0, 1000)) do
    local stay = redis.call('ZSCORE', K.holders, user)
    local served = redis.call('ZSCORE', K.served, user)
    if stay and served then
      redis.call('ZADD', K.unrecorded, now, user)
      redis.call('ZADD', K.holders, expires, user)
      stale[#stale + 1] = user
      stale[#stale + 1] = expires
      stale[#stale + 1] = tonumber(served)
    else
      redis.call('ZREM', K.unrecorded, user)
    end
  end
end
local freeing = {}
if cutoff > 0 then
  local members = redis.call('ZRANGE', K.freeing, 0, 999, 'WITHSCORES')
  for i = 1, #members, 2 do
    local member = members[i]
    local at, rest = string.match(member, '^(%d+)|(.*)$')
    if at and tonumber(at) <= cutoff then
      local again = string.format('%d|', now) .. rest
      redis.call('ZREM', K.freeing, member)
      redis.call('ZADD', K.freeing, members[i + 1], again)
      freeing[#freeing + 1] = again
    end
  end
end
return {expires, redis.call('ZCARD', K.holders), redis.call('ZCARD', K.waiting), admitted, expired, stale, ended, freeing}
