-- tick.lua: the slot monitor's tick for one event: the admission step, then
-- the admissions left unrecorded (after the admission step, which it is run
-- behind: admission_keys.lua, hold_lib.lua, adaptive.lua,
-- admission.lua).
--
-- KEYS[1..22] the admission keys (admission_keys.lua)
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
-- ARGV[7] the disconnect grace (ms): a waiting person whose page has been
-- gone for longer is away (kept in stats.awayAfterMs for every admission
-- step); the tick calls the away people whose turn comes (admit()'s call),
-- then ends the turns whose claim window closed (away_lib.lua)
-- ARGV[8] keep (ms): how long past its end a released admission stays
-- listed (queue.ReleasedKeep), as release.lua keeps it
-- KEYS[23] released ZSET, KEYS[24] arrived ZSET (arrive.lua)
--
-- No-shows (config arrivalSeconds set): before the admission step, each
-- recorded holder admitted at least arrivalSeconds ago (hold end - stay
-- <= now - arrivalSeconds) whose arrival is not marked for that hold
-- (arrived's score is not their hold end) loses the slot as a release
-- takes it (release.lua): out of active, listed in released (the guards
-- refuse the token), their item holds ended; with record '1' the slot
-- goes to freeing, still counted, its member returned among freeing for
-- the caller to write the release record; without, it is free at once
-- and the admission step hands it on. Counted in stats.noShowTotal. Each
-- holder is looked at once, when their deadline passes: stats.
-- noShowCheckedTo is the hold end up to which holders were looked at
-- (a ZRANGEBYSCORE of active from there, not a scan of every holder).
-- An arrived holder is never freed; arrived is trimmed of ended holds.
--
-- Runs admit() (admission.lua): atomic, so any number of gateways may call
-- it at once: holders never exceed capacity, admissions never exceed the
-- rate.
--
-- Returns {expiresAt, holders, waiting, admitted, expired, stale, ended,
-- freeing, called, lapsed, noShows} (holders and waiting after the admission): admitted a flat list
-- of triples user, place score, served mark; expired the users whose
-- recorded stay ended; stale a flat list of triples user, end of stay
-- (renewed), served mark; ended the item holds that ended with the expired
-- users' slots (admit()); freeing the restamped members of the releases
-- to record again; called the quads user, place score, end of the claim
-- window, served mark of the people called; lapsed the users whose turn
-- lapsed; noShows how many no-shows' slots were freed (their members
-- among freeing when recorded). NO_EVENT when the event has no
-- configuration.

-- free_no_shows frees the slots of the no-shows whose deadline passed
-- since the last look (above): returns how many, the item holds that
-- ended with them, and the freeing members added.
local function free_no_shows(now, record)
  redis.call('ZREMRANGEBYSCORE', KEYS[24], '-inf', now)
  local conf = redis.call('HMGET', K.config, 'arrivalSeconds', 'staySeconds', 'rebuilding', 'holdSeconds')
  local arrival, stay = tonumber(conf[1] or '0') or 0, tonumber(conf[2] or conf[4] or '')
  if arrival <= 0 or not stay or conf[3] then
    return 0, 0, {}
  end
  local bound = now + (stay - arrival) * 1000 -- the hold end of an admission made arrival ago
  local from = math.max(now, tonumber(redis.call('HGET', K.stats, 'noShowCheckedTo') or '') or now)
  if bound <= from then
    return 0, 0, {}
  end
  local l = redis.call('ZRANGEBYSCORE', K.holders, '(' .. from, bound, 'WITHSCORES', 'LIMIT', 0, 1000)
  local n, ended, members = 0, 0, {}
  for i = 1, #l, 2 do
    local user, ends = l[i], l[i + 1]
    if not redis.call('ZSCORE', K.unrecorded, user) and tonumber(redis.call('ZSCORE', KEYS[24], user) or '') ~= tonumber(ends) then
      redis.call('ZREM', K.holders, user)
      ended = ended + end_holds(K.holds, K.items, K.sold, user)
      redis.call('ZADD', KEYS[23], ends, ends .. '|' .. user)
      if record == '1' then
        local served = tonumber(redis.call('ZSCORE', K.served, user) or '0')
        local member = string.format('%d|%d|', now, served) .. user
        redis.call('ZADD', K.freeing, ends, member)
        members[#members + 1] = member
      end
      n = n + 1
    end
  end
  if #l == 2000 then
    -- A full page: the next look starts at its last end (again, unless
    -- the page was one end: then past it, those left keeping their slots).
    local last = tonumber(l[#l])
    bound = last > tonumber(l[2]) and last - 1 or last
  end
  redis.call('HSET', K.stats, 'noShowCheckedTo', string.format('%d', bound))
  if n > 0 then
    redis.call('HINCRBY', K.stats, 'noShowTotal', n)
  end
  return n, ended, members
end

local now = tonumber(ARGV[1])
if ARGV[7] and ARGV[7] ~= '0' then
  redis.call('HSET', K.stats, 'awayAfterMs', ARGV[7])
end
local keep = tonumber(ARGV[8] or '')
if keep then
  redis.call('ZREMRANGEBYSCORE', KEYS[23], '-inf', now - keep)
end
local noShows, noShowHolds, noShowMembers = free_no_shows(now, ARGV[5])
local expires, expired, admitted, ended, called = admit(ARGV[3], now, tonumber(ARGV[2]), ARGV[4], ARGV[5], '1')
if not expires then
  return NO_EVENT
end
ended = ended + noShowHolds
local lapsed = {}
if redis.call('HEXISTS', K.config, 'rebuilding') == 0 then
  lapsed = lapse_turns(now, 1000)
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
local freeing = noShowMembers
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
return {expires, redis.call('ZCARD', K.holders), redis.call('ZCARD', K.waiting), admitted, expired, stale, ended, freeing, called, lapsed, noShows}
