-- status.lua: where a set of users stands, read in one step: a poll's
-- status, and a gateway's for the users it does not follow yet
-- (gateway.Tracker; redisstore.Status and Store.Line).
--
-- KEYS[1] waiting ZSET, KEYS[2] holders ZSET, KEYS[3] seen ZSET,
-- KEYS[4] stats HASH, KEYS[5] prequeue ZSET, KEYS[6] config HASH,
-- KEYS[7] control HASH, KEYS[8] unrecorded ZSET, KEYS[9] served ZSET,
-- KEYS[10] journal LIST, KEYS[11] called ZSET, KEYS[12] callplaces HASH,
-- KEYS[13] claims ZSET, KEYS[14] lapsed ZSET (away_lib.lua), KEYS[15] moved
-- ZSET (move.lua)
-- ARGV[1] now (unix ms), ARGV[2] the gateway that holds the users'
-- sockets ('': a poll), ARGV[3..] user ids
--
-- For each user: the 0-based rank in the waiting line or NONE, the end of
-- their stay (unix ms), 0 when a stay of theirs ended (served, neither
-- waiting nor holding: a user admitted while away is told the turn passed,
-- not "pending"), or NONE, 1 when the stay is unrecorded (its admission
-- is not yet in the log, admission.lua: it is told as no stay, the next in
-- line), else 0, the 0-based place among the drop's pre-queue or NONE, the
-- time a slot frees for them (below) or NONE, and their score in the line
-- (Redis's string; '' when not waiting), and their turn: the end of the
-- claim window when they were called while away (queue.Away), TURN_LAPSED
-- when a call of theirs lapsed since they were last served, TURN_MOVED when
-- their place moved to another user since (a resume link, move.lua), else
-- TURN_NONE. What is told of these (hidden
-- before a drop's opening, nothing while rebuilt) is queue.Head.Told's.
--
-- Every user found waiting is marked present: a poll's presence is now,
-- unless a gateway holds it (ZADD GT: an attached presence is higher than
-- any time); a gateway's is ATTACHED_BASE + the gateway, kept until it lets
-- go (detach.lua) or stops reading the line (sweep.lua). A called user
-- read here is back: they are put in claims (at the place they left), and
-- the next admission step admits them (away_lib.lua's claim_turns).
--
-- For a user waiting at place p (rank + 1) of an event whose slots are all
-- taken for them (k = p - (capacity - holders) >= 1, holders counting the
-- holds ending after now), the time (unix ms) a slot frees for them if
-- every holder keeps their slot to the end of the stay and each freed slot
-- is taken at once: the k-th end of stay, the current stays' ends in
-- order, then each slot again a stay later (the end of the
-- ((k - 1) mod holders + 1)-th stay plus floor((k - 1) / holders) stays);
-- NONE when a slot is free for them (or nobody holds one). gateway.slotAt
-- is the same for the users a gateway follows.
--
-- Returns {head, epoch, seq, rank1, hold1, unrecorded1, drawn1, slot1,
-- score1, turn1, rank2, ...}: head is line_head's, epoch and seq where the line's
-- journal stands (journal_lib.lua; the places are those of that point).
local now = tonumber(ARGV[1])
local head, ended, holders = line_head(now, KEYS[1], KEYS[2], KEYS[4], KEYS[6], KEYS[7], KEYS[11])
local capacity, stayMs = head[6], head[7]
local epoch, seq = journal_head(KEYS[10])
-- slot_at is when a slot frees for the user at place p under full holds,
-- or NONE (above).
local function slot_at(p)
  local k = p - (capacity - holders)
  if capacity <= 0 or holders <= 0 or k < 1 then
    return NONE
  end
  local i = ended + (k - 1) % holders
  local e = redis.call('ZRANGE', KEYS[2], i, i, 'WITHSCORES')
  if not e[2] then
    return NONE
  end
  return tonumber(e[2]) + math.floor((k - 1) / holders) * stayMs
end
local gateway = ARGV[2]
local out = {head, epoch, seq}
for i = 3, #ARGV do
  local user = ARGV[i]
  local rank = redis.call('ZRANK', KEYS[1], user)
  local score = ''
  if rank then
    score = redis.call('ZSCORE', KEYS[1], user)
    if gateway == '' then
      redis.call('ZADD', KEYS[3], 'GT', now, user)
    else
      redis.call('ZADD', KEYS[3], ATTACHED_BASE + tonumber(gateway), user)
    end
  else
    rank = NONE
  end
  local stay = redis.call('ZSCORE', KEYS[2], user)
  local unrecorded = 0
  if stay and redis.call('ZSCORE', KEYS[8], user) then
    unrecorded = 1
  elseif not stay and rank == NONE and redis.call('ZSCORE', KEYS[9], user) then
    stay = 0
  end
  out[#out + 1] = rank
  out[#out + 1] = stay and tonumber(stay) or NONE
  out[#out + 1] = unrecorded
  out[#out + 1] = redis.call('ZRANK', KEYS[5], user) or NONE
  out[#out + 1] = (rank >= 0 and unrecorded == 0) and slot_at(rank + 1) or NONE
  out[#out + 1] = score
  local turn = TURN_NONE
  if rank == NONE and stay == 0 then
    local deadline = redis.call('ZSCORE', KEYS[11], user)
    if deadline then
      turn = tonumber(deadline)
      redis.call('ZADD', KEYS[13], 'NX', redis.call('HGET', KEYS[12], user) or '0', user)
    else
      local lapsed = redis.call('ZSCORE', KEYS[14], user)
      local mark = tonumber(redis.call('ZSCORE', KEYS[9], user) or '0')
      local moved = redis.call('ZSCORE', KEYS[15], user)
      if lapsed and tonumber(lapsed) >= mark then
        turn = TURN_LAPSED
      elseif moved and tonumber(moved) >= mark then
        turn = TURN_MOVED
      end
    end
  end
  out[#out + 1] = turn
end
return out
