-- journal_lib.lua: the line's journal, what lets a gateway keep its users'
-- places without asking Redis for each of them every round
-- (gateway.Tracker, docs/data.md "The line's journal").
--
-- The journal (LIST, JournalKey) holds one element per script call that
-- changed the waiting line other than by a join behind everyone: its
-- first line "<epoch> <seq>", then one line per change:
--   "+<score> <user>"  a join placed ahead of someone (not at the tail)
--   "-<score> <user>"  a user taken out of the line (leave, sweep)
--   "p<n> <score> <user>" the first n of the line admitted, the last of
--                      them <user> at <score>
--   "d<score> <user>"  a join added to the drop's pre-queue (drawn places)
--   "x <user>"         the user's presence was let go by the gateway that
--                      held it (the others holding a socket take it again)
-- Scores are Redis's own strings (or the caller's), never reformatted. The
-- epoch is the server's time (TIME, in µs) the list was started: a line
-- rebuilt, or an event deleted and made again, starts a new one, and a
-- caller that knew another epoch learns every place again. seq counts elements from 1 in
-- an epoch; the list keeps the last JOURNAL_KEEP of them (trimmed to half
-- when longer), so a caller further behind learns every place again too.
local JOURNAL_KEEP = 10000
local journal_changes = {}

-- journal_note notes one change for journal_flush.
local function journal_note(op, score, user)
  journal_changes[#journal_changes + 1] = op .. score .. ' ' .. user
end

-- journal_note_lines notes changes written as their lines already
-- (without the last newline).
local function journal_note_lines(lines)
  journal_changes[#journal_changes + 1] = lines
end

-- journal_ahead tells whether a join at (place, user) comes before
-- (score, last) in the line, a sorted set's order: by score, then by the
-- members' bytes. Lua's string < is strcoll, which follows the server's
-- locale (redis-server sets LC_COLLATE from its environment: under
-- en_US.UTF-8, 'a' < 'B' and '-' is ignored), so ties compare byte by byte.
local function journal_ahead(place, user, score, last)
  if place ~= score then
    return place < score
  end
  for i = 1, math.min(#user, #last) do
    local a, b = string.byte(user, i), string.byte(last, i)
    if a ~= b then
      return a < b
    end
  end
  return #user < #last
end

-- journal_head returns the epoch and the last seq of the journal at key,
-- starting it (seq 1, no changes) when it does not exist.
local function journal_head(key)
  local last = redis.call('LINDEX', key, LAST)
  if not last then
    local t = redis.call('TIME')
    local epoch = t[1] .. string.format('%06d', tonumber(t[2]))
    redis.call('RPUSH', key, epoch .. ' 1')
    return epoch, 1
  end
  local epoch, seq = string.match(last, '^(%S+) (%d+)')
  return epoch, tonumber(seq)
end

-- journal_flush appends the changes noted, if any, as one element.
local function journal_flush(key)
  if #journal_changes == 0 then
    return
  end
  local epoch, seq = journal_head(key)
  redis.call('RPUSH', key, epoch .. ' ' .. string.format('%d', seq + 1) .. '\n' .. table.concat(journal_changes, '\n'))
  journal_changes = {}
  if redis.call('LLEN', key) > JOURNAL_KEEP then
    redis.call('LTRIM', key, LAST + 1 - JOURNAL_KEEP / 2, LAST)
  end
end
