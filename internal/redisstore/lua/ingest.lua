-- ingest.lua: apply a batch of joins and leaves of one event, in order,
-- then let people straight in while there is room (after the admission
-- step, which it is run behind: admission_keys.lua, hold_lib.lua,
-- adaptive.lua, admission.lua).
--
-- KEYS[1..15] the admission keys (admission_keys.lua), KEYS[16] prequeue ZSET,
-- KEYS[17] offsets HASH (partition -> the highest offset applied),
-- KEYS[18] visits HASH (user -> the visit of the join that last queued them)
-- ARGV[1] now (unix ms)
-- ARGV[2] fast-track batch: the most users admitted at once after the
-- batch (0: none; the slot monitor admits)
-- ARGV[3] event id, ARGV[4] the admissions channel ('' : publish nothing)
-- ARGV[5] the commitment of the draw whose scores the caller computed ('':
-- the caller knows of no draw)
-- ARGV[6] record ('1': the caller records the fast track's admissions in
-- the log, admission.lua)
-- ARGV[7..] septuples: op ("join" | "leave" | "record"), userId, stamp
-- (unix ms), drawn score (package draw's Score of the user; '' without a
-- draw), partition, offset (-1: the message has no place in the log),
-- visit (a join's Idempotency-Key; '' none)
--
-- The offsets: a message at or below its partition's mark in KEYS[17] was
-- applied already (a redelivery, or the late batch of a consumer whose
-- partition moved to another member) and is skipped, counted as ignored;
-- the marks are raised to the offsets of the batch in the same step. A
-- "record" (a change Redis made already) only raises its partition's mark.
--
-- A join takes the score of its stamp, or, when the event is a drop and it
-- was stamped before config.opensAt, its drawn score (negative: before every
-- later join), whenever it arrives; such a join is also kept in the
-- prequeue ZSET (userId -> drawn score), the draw's list. It is added
-- unless the user is already waiting (their first place stands), holds an
-- unexpired slot (or an unrecorded one, whose hold does not end before it
-- is recorded: admission.lua), or was admitted after this join was stamped (served, the
-- admission's time): a replayed join after a consumer crash, or the retry
-- of a join whose answer was lost, never queues or admits anyone again,
-- while a new join after a release (stamped later) queues again, unless it
-- carries the visit of the join that queued the user last (KEYS[18], kept
-- when a join is added): then it is a try of that admitted visit sent after
-- the admission (a retry of a try answered 503 that landed), and queues
-- nobody. A leave removes the user from the waiting line.
--
-- Fairness figures, in stats: a join added with a score below
-- stats.admittedMaxScore (someone placed behind it was already admitted)
-- that is still waiting after the fast track counts one inversion; the delay of each added join (now - stamp) is counted in
-- stats.delay:<i>, bucket i holding delays of at most 2^i ms and the last
-- (i = 21, queue.DelayBuckets - 1) everything longer.
--
-- The journal (journal_lib.lua) gets, in one element with the fast
-- track's admissions, each join added ahead of the line's last, each join
-- added to the pre-queue and each leave: a join behind everyone moves
-- nobody's place and is not noted.
--
-- The fast track: after the batch, admit() (admission.lua) runs with the
-- fast-track batch, so a join that finds room (free capacity, rate budget,
-- the event open, not paused) and nobody ahead is admitted in the same
-- atomic step that keeps the capacity: there is no second way into a slot.
--
-- Returns {joined, left, ignored, admitted, inversions, expiresAt,
-- admittedUsers, dropped, ended} where ignored counts joins of users who
-- were already waiting, holding a slot or served, and leaves of users not
-- waiting, admitted the users the fast track let in, and admittedUsers,
-- dropped and ended are as tick.lua returns them; NO_EVENT when the event has no
-- configuration (unknown or deleted event), STALE_DRAW when ARGV[5] is not
-- the event's commitment (the caller's draw is stale), REBUILDING while the
-- event is being rebuilt (config.rebuilding; the caller holds the messages
-- until it ends): then nothing is written.
--
-- The batch's users are read in bulk before its ops are applied in order
-- to a copy in Lua (their places in the line, their served marks, their
-- pre-queue places when the batch has drawn joins), and the changes are
-- written in bulk after: one command per key for the whole batch, not a
-- read and a write per join (docs/performance.md, "The ingest step's Redis
-- CPU").
local conf = redis.call('HMGET', K.config, 'capacity', 'opensAt', 'drawCommit', 'rebuilding')
if conf[4] then
  return REBUILDING
end
if not conf[1] then
  return NO_EVENT
end
if (conf[3] or '') ~= ARGV[5] then
  return STALE_DRAW
end
local opensAt = tonumber(conf[2] or '0') or 0
local now = tonumber(ARGV[1])

-- BULK_ARGS bounds the arguments of one bulk command (Redis's Lua unpacks
-- at most a few thousand values).
local BULK_ARGS = 4000

-- scores_of returns user -> score (Redis's string) in the sorted set at key
-- for users, the users it lacks absent.
local function scores_of(key, users)
  local at = {}
  for i = 1, #users, BULK_ARGS do
    local part = {}
    for j = i, math.min(i + BULK_ARGS - 1, #users) do
      part[#part + 1] = users[j]
    end
    local got = redis.call('ZMSCORE', key, unpack(part))
    for j, score in ipairs(got) do
      if score then
        at[part[j]] = score
      end
    end
  end
  return at
end

-- write_bulk runs cmd on key with args (pairs), a bounded number at once.
local function write_bulk(cmd, key, args, flag)
  for i = 1, #args, BULK_ARGS do
    local part = {}
    if flag then
      part[1] = flag
    end
    for j = i, math.min(i + BULK_ARGS - 1, #args) do
      part[#part + 1] = args[j]
    end
    redis.call(cmd, key, unpack(part))
  end
end

local users, listed, drawn = {}, {}, false
for i = 7, #ARGV, 7 do
  local op, user = ARGV[i], ARGV[i + 1]
  if op ~= 'record' and not listed[user] then
    listed[user] = true
    users[#users + 1] = user
  end
  if op == 'join' and ARGV[i + 3] ~= '' and tonumber(ARGV[i + 2]) < opensAt then
    drawn = true
  end
end
local waitingAt, servedAt = scores_of(K.waiting, users), scores_of(K.served, users)
local preAt = drawn and scores_of(KEYS[16], users) or {}
-- wasAt keeps each touched user's place before the batch (false: none),
-- taken at their first change; touched lists them once, in order.
local wasAt, touched, preAdded, visitSet, visitUsers = {}, {}, {}, {}, {}
local function touch(user)
  if wasAt[user] == nil then
    wasAt[user] = waitingAt[user] or false
    touched[#touched + 1] = user
  end
end

local maxAdmitted = tonumber(redis.call('HGET', K.stats, 'admittedMaxScore') or '')
local joined, left, ignored = 0, 0, 0
-- The line's last (score, user), for the journal: a join before it is noted.
local last = redis.call('ZRANGE', K.waiting, LAST, LAST, 'WITHSCORES')
local lastScore, lastUser = tonumber(last[2]), last[1]
local overtaken, delays = {}, {}
local marks, raised = {}, {}
for i = 7, #ARGV, 7 do
  local op, user = ARGV[i], ARGV[i + 1]
  local part, offset = ARGV[i + 4], tonumber(ARGV[i + 5])
  if offset >= 0 then
    if marks[part] == nil then
      marks[part] = tonumber(redis.call('HGET', KEYS[17], part) or '-1')
    end
    if offset <= marks[part] then
      if op ~= 'record' then
        op = 'applied'
      end
    else
      marks[part], raised[part] = offset, ARGV[i + 5]
    end
  end
  if op == 'record' then
    -- counted as ignored by the caller
  elseif op == 'applied' then
    ignored = ignored + 1
  elseif op == 'join' then
    -- The score goes to ZADD as the caller's string (no number formatting);
    -- place is its value.
    local stamp, visit = tonumber(ARGV[i + 2]), ARGV[i + 6]
    local score, place = ARGV[i + 2], stamp
    if stamp < opensAt and ARGV[i + 3] ~= '' then
      score = ARGV[i + 3]
      place = tonumber(score)
      if not preAt[user] then
        preAt[user] = score
        preAdded[#preAdded + 1] = score
        preAdded[#preAdded + 1] = user
        journal_note('d', score, user)
      end
    end
    -- Every holder has a served mark (admission.lua sets both; a rebuild
    -- keeps both): a user never served holds nothing, and a first join
    -- reads nothing more.
    local served = servedAt[user]
    local hold = served and redis.call('ZSCORE', K.active, user)
    if hold and (tonumber(hold) > now or redis.call('ZSCORE', K.unrecorded, user)) then
      ignored = ignored + 1
    elseif served and stamp <= tonumber(served) then
      ignored = ignored + 1
    elseif served and visit ~= '' and (visitSet[user] or redis.call('HGET', KEYS[18], user)) == visit then
      -- a try of the visit that was admitted, sent after its admission
      ignored = ignored + 1
    elseif not waitingAt[user] then
      touch(user)
      waitingAt[user] = score
      joined = joined + 1
      if lastScore and (place < lastScore or (place == lastScore and user < lastUser)) then
        journal_note('+', score, user)
      else
        lastScore, lastUser = place, user
      end
      if visit ~= '' then
        if not visitSet[user] then
          visitUsers[#visitUsers + 1] = user
        end
        visitSet[user] = visit
      end
      if maxAdmitted and place < maxAdmitted then
        overtaken[#overtaken + 1] = user
      end
      local b, bound = 0, 1
      while now - stamp > bound and b < 21 do
        b, bound = b + 1, bound * 2
      end
      delays[b] = (delays[b] or 0) + 1
    else
      ignored = ignored + 1
    end
  else
    local at = waitingAt[user]
    if at then
      touch(user)
      waitingAt[user] = false
      journal_note('-', at, user)
      left = left + 1
    else
      ignored = ignored + 1
    end
  end
end
-- The line as the ops left it: the users out of it removed, those put in
-- (or back, at another place) added.
local adds, removes = {}, {}
for _, user in ipairs(touched) do
  local now_at, was = waitingAt[user], wasAt[user]
  if not now_at and was then
    removes[#removes + 1] = user
  elseif now_at and now_at ~= was then
    adds[#adds + 1] = now_at
    adds[#adds + 1] = user
  end
end
write_bulk('ZREM', K.waiting, removes)
write_bulk('ZADD', K.waiting, adds)
write_bulk('ZADD', KEYS[16], preAdded, 'NX')
local visits = {}
for _, user in ipairs(visitUsers) do
  visits[#visits + 1] = user
  visits[#visits + 1] = visitSet[user]
end
write_bulk('HSET', KEYS[18], visits)
for part, offset in pairs(raised) do
  redis.call('HSET', KEYS[17], part, offset)
end
for b, n in pairs(delays) do
  redis.call('HINCRBY', K.stats, 'delay:' .. b, n)
end
local expires, dropped, admitted, ended = 0, {}, {}, 0
local batch = tonumber(ARGV[2])
if batch > 0 then
  expires, dropped, admitted, ended = admit(ARGV[3], now, batch, ARGV[4], ARGV[6])
end
journal_flush(K.journal)
local inversions = 0
for _, user in ipairs(overtaken) do
  if redis.call('ZSCORE', K.waiting, user) then
    inversions = inversions + 1
  end
end
if inversions > 0 then
  redis.call('HINCRBY', K.stats, 'inversions', inversions)
end
return {joined, left, ignored, #admitted / 3, inversions, expires, admitted, dropped, ended}
