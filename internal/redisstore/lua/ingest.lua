-- ingest.lua: apply a batch of joins and leaves of one event, in order,
-- then let people straight in while there is room (after the admission
-- step, which it is run behind: admission_keys.lua, journal_lib.lua,
-- hold_lib.lua, adaptive.lua, admission.lua; then bulk_lib.lua, the bulk
-- reads and writes, and marks_lib.lua, the partitions' marks).
--
-- KEYS[1..22] the admission keys (admission_keys.lua), KEYS[23] prequeue ZSET,
-- KEYS[24] offsets HASH (partition -> the highest offset applied),
-- KEYS[25] join keys HASH (the key :visits; user -> the join key of the join that last queued them)
-- ARGV[1] now (unix ms)
-- ARGV[2] fast-track batch: the most users admitted at once after the
-- batch (0: none; the slot monitor admits)
-- ARGV[3] event id, ARGV[4] the admissions channel ('' : publish nothing)
-- ARGV[5] the commitment of the draw whose scores the caller computed ('':
-- the caller knows of no draw)
-- ARGV[6] record ('1': the caller records the fast track's admissions in
-- the log, admission.lua)
-- ARGV[7] n, the joins and leaves listed (records are not listed)
-- ARGV[8] the columns after userId and stamp: 'v' join keys, 'd' drawn
-- scores, 'vd' both ('': neither)
-- ARGV[9] '1' when no user is listed twice ('': some may be)
-- ARGV[10] '1' when the batch is plain: joins only, their (stamp, user)
-- rising in the order listed ('': not known)
-- ARGV[11] the delays' histogram of the joins listed, "<bucket> <count> "
-- each (bucket i: a delay now - stamp of at most 2^i ms, 21 longer)
-- ARGV[12] each listed message's delay bucket, one byte each ('A' + i)
-- ARGV[13] p, the partitions the batch read from, then p triples
-- partition, low (the offset of its first listed message; '' none), high
-- (its highest offset, records included)
-- ARGV[14 + 3p] where: for each listed message "<slot> <offset> " (slot
-- 1..p, the triple it was read from; 0 and -1: not from the log), read
-- only when a partition's mark is at or above its low
-- then columns of n: userId; stamp (unix ms; '-' for a leave); with 'v'
-- the join key's digest (of a join's Idempotency-Key, JoinKeyDigest; '' none: without the column, none
-- has one); with 'd' the drawn score (package draw's Score of the user;
-- the caller knows of a draw)
-- then, when ARGV[10] is '1', the notes of the joins listed: "+<stamp>
-- <user>\n" each, in the order listed (a join placed before the line's
-- last is noted with its line: the first ones of a plain batch), or ''
-- when the caller took the batch to go behind everyone (then such a join
-- is noted as the general step notes it)
--
-- The caller lists each message once, in the order read (joins of users
-- listed once: by stamp, then user, since their order changes nothing but
-- the journal's notes), offsets rising within a partition: a message at or
-- below an earlier offset of its partition in the same batch is skipped by
-- the caller, as applied.
--
-- The offsets: a message at or below its partition's mark in KEYS[24] was
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
-- unexpired slot (or an unrecorded one, whose stay does not end before it
-- is recorded: admission.lua), or was admitted after this join was stamped (served, the
-- admission's time): a replayed join after a consumer crash, or the retry
-- of a join whose answer was lost, never queues or admits anyone again,
-- while a new join after a release (stamped later) queues again, unless it
-- carries the visit of the join that queued the user last (KEYS[25], kept
-- when a join is added): then it is a try of that admitted visit sent after
-- the admission (a retry of a try answered 503 that landed), and queues
-- nobody. A leave removes the user from the waiting line.
--
-- Fairness figures, in stats: a join added with a score below
-- stats.admittedMaxScore (someone placed behind it was already admitted)
-- that is still waiting after the fast track counts one inversion; the delay of each added join (now - stamp) is counted in
-- stats.delay:<i>, bucket i holding delays of at most 2^i ms and the last
-- (i = 21, queue.DelayBuckets - 1) everything longer: the caller's
-- histogram less the joins not added.
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
-- admittedUsers, expired, ended, last} where last is the score of the
-- line's last member after the batch as far as it knows (nil: none; a
-- leave or an admission since may have taken it out), the caller's hint
-- for its next batch's notes, and ignored counts joins of users who
-- were already waiting, holding a slot or served, and leaves of users not
-- waiting, admitted the users the fast track let in, and admittedUsers,
-- expired and ended are as tick.lua returns them; NO_EVENT when the event has no
-- configuration (unknown or deleted event), STALE_DRAW when ARGV[5] is not
-- the event's commitment (the caller's draw is stale), REBUILDING while the
-- event is being rebuilt (config.rebuilding; the caller holds the messages
-- until it ends): then nothing is written.
--
-- The batch's users are read in bulk before its ops are applied in order
-- to a copy in Lua (their places in the line, their served marks, their
-- pre-queue places when the batch has drawn joins), and the changes are
-- written in bulk after: one command per key for the whole batch, not a
-- read and a write per join. A plain batch (joins of users listed once,
-- sorted by the caller) of users neither waiting nor served, with no drawn
-- place and no redelivery, adds everyone: it skips the per-message steps
-- but for its first joins, those placed before the line's last or below
-- admittedMaxScore (docs/performance.md, "The ingest step's Redis CPU").
-- ARGV as a local: a global is a table lookup at every use, and the
-- per-join loops below read it a few times a join.
local ARGV = ARGV
local conf = redis.call('HMGET', K.config, 'capacity', 'opensAt', 'drawCommit', 'rebuilding', 'drawSource', 'drawRoot')
if conf[4] then
  return REBUILDING
end
if not conf[1] then
  return NO_EVENT
end
if (conf[3] or '') ~= ARGV[5] then
  return STALE_DRAW
end
local now = tonumber(ARGV[1])
-- opensAt here decides which joins are drawn: those stamped before it; a
-- chain draw's entries froze DRAW_FREEZE_LAG_MS after it (or when their
-- root was written, whichever clock said so first), and a join ingested
-- later is placed at its stamp, after the drawn ones. The first batch cut
-- by its clock keeps the marks of the joins applied before it (drawMarks,
-- as draw_freeze.lua would): the cut a rebuild finds the entries by.
local opensAt = tonumber(conf[2] or '0') or 0
if conf[5] and (conf[6] or now >= opensAt + DRAW_FREEZE_LAG_MS) then
  if not conf[6] then
    redis.call('HSETNX', K.config, 'drawMarks', table.concat(redis.call('HGETALL', KEYS[24]), ' '))
  end
  opensAt = 0
end
local n, once, plain = tonumber(ARGV[7]), ARGV[9] == '1', ARGV[10] == '1'
local keyed, drawn = string.find(ARGV[8], 'v', 1, true) ~= nil, string.find(ARGV[8], 'd', 1, true) ~= nil
local parts = tonumber(ARGV[13])
-- The columns: ARGV[U + i] is message i's user, ARGV[S + i] its stamp,
-- ARGV[V + i] its join key, ARGV[D + i] its drawn score.
local U = 14 + 3 * parts
local S, V = U + n, U + 2 * n
local D = keyed and U + 3 * n or V
-- ARGV[T] is a plain batch's notes, after the last column.
local T = U + (2 + (keyed and 1 or 0) + (drawn and 1 or 0)) * n + 1

-- The marks: each partition's is raised to its high; the messages of a
-- partition whose low is at or below its mark are found in the where list,
-- and those at or below the mark skipped.
local skip = marks_raise(KEYS[24], 14, parts, ARGV[U])

local waitingAt, servedAt = bulk_scores(K.waiting, U, n), bulk_served(K.served, U, n)
local preAt = {}
if drawn then
  for i = 1, n do
    local stamp = ARGV[S + i]
    if stamp ~= '-' and ARGV[D + i] ~= '' and tonumber(stamp) < opensAt then
      preAt = bulk_scores(KEYS[23], U, n)
      break
    end
  end
end
local maxAdmitted = tonumber(redis.call('HGET', K.stats, 'admittedMaxScore') or '')
-- The line's last (score, user), for the journal: a join before it is noted.
local last = redis.call('ZRANGE', K.waiting, LAST, LAST, 'WITHSCORES')
local lastScore, lastUser = tonumber(last[2]), last[1]
local delays = {}
for b, count in string.gmatch(ARGV[11], '(%d+) (%d+) ') do
  delays[tonumber(b)] = tonumber(count)
end
local joined, left, ignored = 0, 0, 0
local adds, removes, preAdded, joinKeys, overtaken = {}, {}, {}, {}, {}
-- cur: the general step's last change of each user it changed (below).
local cur

-- A plain batch adds everyone: users neither waiting nor served, none
-- drawn. Its joins rise, so those placed before the line's last (noted in
-- the journal) and those below admittedMaxScore are the first ones.
if plain and n > 0 and not skip then
  plain = not drawn or tonumber(ARGV[S + 1]) >= opensAt
  for i = 1, n do
    if not plain then
      break
    end
    plain = not (waitingAt[i] or servedAt[i])
  end
end
if plain and n > 0 and not skip then
  -- The joins placed before the line's last are the first k (they rise):
  -- their notes are the first k lines of the caller's text.
  local k = 0
  if lastScore then
    local hi = n
    while k < hi do
      local mid = math.floor((k + hi + 1) / 2)
      if journal_ahead(tonumber(ARGV[S + mid]), ARGV[U + mid], lastScore, lastUser) then
        k = mid
      else
        hi = mid - 1
      end
    end
  end
  if k > 0 and ARGV[T] == '' then
    for i = 1, k do
      journal_note('+', ARGV[S + i], ARGV[U + i])
    end
  elseif k > 0 then
    local bytes = 0
    for i = 1, k do
      bytes = bytes + #ARGV[S + i] + #ARGV[U + i] + 3
    end
    journal_note_lines(string.sub(ARGV[T], 1, bytes - 1))
  end
  if k < n then
    lastScore = tonumber(ARGV[S + n])
  end
  for i = 1, maxAdmitted and n or 0 do
    if tonumber(ARGV[S + i]) >= maxAdmitted then
      break
    end
    overtaken[#overtaken + 1] = ARGV[U + i]
  end
  for i = 1, n do
    adds[2 * i - 1], adds[2 * i] = ARGV[S + i], ARGV[U + i]
  end
  if keyed then
    for i = 1, n do
      local key = ARGV[V + i]
      if key ~= '' then
        joinKeys[#joinKeys + 1] = ARGV[U + i]
        joinKeys[#joinKeys + 1] = key
      end
    end
  end
  joined = n
else
  -- cur holds the place of each user the batch changed (false: out of the
  -- line), unless each user is listed once; the others are at
  -- waitingAt[i]. adds and removes are the changes while nobody is changed
  -- twice (again: then they are worked out afresh).
  local preCur, keyOf, again = {}, {}, false
  cur = {}
  -- notAdded takes message i's join out of the delays.
  local function notAdded(i)
    local b = string.byte(ARGV[12], i) - 65
    delays[b] = delays[b] - 1
    ignored = ignored + 1
  end
  for i = 1, n do
    local user, stamp = ARGV[U + i], ARGV[S + i]
    local at = waitingAt[i]
    if not once and cur[user] ~= nil then
      at = cur[user]
    end
    if stamp == '-' then
      if skip and skip[i] then
        ignored = ignored + 1
      elseif at then
        if not once then
          again = again or cur[user] ~= nil
          cur[user] = false
        end
        removes[#removes + 1] = user
        journal_note('-', at, user)
        left = left + 1
      else
        ignored = ignored + 1
      end
    elseif skip and skip[i] then
      notAdded(i)
    else
      -- The score goes to ZADD as the caller's string (no number
      -- formatting); place is its value.
      local key, ts = keyed and ARGV[V + i] or '', tonumber(stamp)
      local score, place = stamp, ts
      if drawn and ts < opensAt and ARGV[D + i] ~= '' then
        score = ARGV[D + i]
        place = tonumber(score)
        if not (preCur[user] or preAt[i]) then
          preCur[user] = score
          preAdded[#preAdded + 1] = score
          preAdded[#preAdded + 1] = user
          journal_note('d', score, user)
        end
      end
      -- Every holder has a served mark (admission.lua sets both; a rebuild
      -- keeps both): a user never served holds nothing, and a first join
      -- reads nothing more.
      local served, refused = servedAt[i], at
      if served and not at then
        local stay = redis.call('ZSCORE', K.holders, user)
        if stay and (tonumber(stay) > now or redis.call('ZSCORE', K.unrecorded, user)) then
          refused = true
        elseif redis.call('ZSCORE', K.called, user) then
          refused = true -- called: the turn waits for them (admission.lua)
        elseif ts <= tonumber(served) then
          refused = true
        elseif key ~= '' and (keyOf[user] or redis.call('HGET', KEYS[25], user)) == key then
          -- a try of the join that was admitted, sent after its admission
          refused = true
        elseif key ~= '' then
          keyOf[user] = key
        end
      end
      if refused then
        notAdded(i)
      else
        if not once then
          again = again or cur[user] ~= nil
          cur[user] = score
        end
        adds[#adds + 1] = score
        adds[#adds + 1] = user
        joined = joined + 1
        if lastScore and journal_ahead(place, user, lastScore, lastUser) then
          journal_note('+', score, user)
        else
          lastScore, lastUser = place, user
        end
        if key ~= '' then
          joinKeys[#joinKeys + 1] = user
          joinKeys[#joinKeys + 1] = key
        end
        if maxAdmitted and place < maxAdmitted then
          overtaken[#overtaken + 1] = user
        end
      end
    end
  end
  if again then
    -- Someone changed twice: the line as the ops left it, each user once,
    -- against their place before the batch.
    adds, removes = {}, {}
    local done = {}
    for i = 1, n do
      local user = ARGV[U + i]
      local now_at, was = cur[user], waitingAt[i]
      if now_at ~= nil and not done[user] then
        done[user] = true
        if not now_at and was then
          removes[#removes + 1] = user
        elseif now_at and now_at ~= was then
          adds[#adds + 1] = now_at
          adds[#adds + 1] = user
        end
      end
    end
  end
end
bulk_write('ZREM', K.waiting, removes)
bulk_write('ZADD', K.waiting, adds)
bulk_write('ZADD', KEYS[23], preAdded, 'NX')
bulk_write('HSET', KEYS[25], joinKeys)
for b, count in pairs(delays) do
  if count > 0 then
    redis.call('HINCRBY', K.stats, 'delay:' .. b, count)
  end
end
local expires, expired, admitted, ended = 0, {}, {}, 0
local batch = tonumber(ARGV[2])
if batch > 0 then
  expires, expired, admitted, ended = admit(ARGV[3], now, batch, ARGV[4], ARGV[6])
end
journal_flush(K.journal)
-- An overtaken join still waits unless a later message of the batch took
-- its user out (their last change, cur) or the fast track admitted them.
local gone = {}
for i = 1, #admitted, 3 do
  gone[admitted[i]] = true
end
local inversions = 0
for _, user in ipairs(overtaken) do
  if not gone[user] and (cur == nil or cur[user] ~= false) then
    inversions = inversions + 1
  end
end
if inversions > 0 then
  redis.call('HINCRBY', K.stats, 'inversions', inversions)
end
return {joined, left, ignored, #admitted / 3, inversions, expires, admitted, expired, ended, lastScore or false}
