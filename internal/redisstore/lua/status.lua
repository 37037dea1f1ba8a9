-- status.lua: where a set of users stands, for one status round.
--
-- KEYS[1] waiting ZSET, KEYS[2] active ZSET, KEYS[3] seen ZSET,
-- KEYS[4] stats HASH, KEYS[5] prequeue ZSET, KEYS[6] config HASH,
-- KEYS[7] control HASH, KEYS[8] unrecorded ZSET, KEYS[9] served ZSET
-- ARGV[1] now (unix ms), ARGV[2..] user ids
--
-- For each user: the 0-based rank in the waiting line or NONE
-- (RANK_PREQUEUE for everyone in line before a drop's opening,
-- config.opensAt: no position exists, or is told, before the draw), the end
-- of their hold (unix ms), 0 when a hold of theirs ended (served, neither
-- waiting nor holding: a user admitted while away is told the turn passed,
-- not "pending"), or NONE, and the 0-based place the draw gave them among
-- everyone in the pre-queue, or NONE: always NONE before the opening. Every user found
-- waiting is marked seen at now: the presence that keeps their place
-- through the disconnect grace. A holder whose admission is not yet in the
-- log (unrecorded, admission.lua) is told no hold: rank 0, the next in line,
-- for the milliseconds until it is, or for a broker outage's length: its
-- hold does not end meanwhile, so it is never told a hold ended. While the event is being rebuilt
-- (config.rebuilding) every rank is RANK_REBUILDING: no place can be told.
--
-- For a user waiting at place p (rank + 1) of an event whose slots are all
-- taken for them (k = p - (capacity - holders) >= 1, holders counting the
-- holds ending after now), also the time (unix ms) a slot frees for them
-- if every holder keeps their slot to the end of the hold and each freed
-- slot is taken at once: the k-th end of hold, the current holds' ends in
-- order, then each slot again a hold later (the end of the
-- ((k - 1) mod holders + 1)-th hold plus floor((k - 1) / holders) holds);
-- NONE when a slot is free for them (or nobody holds one).
--
-- Returns {total waiting, admittedTotal, rate, rank1, hold1, drawn1, slot1,
-- rank2, ...} where rate is an adaptive event's effective rate
-- (control.effective, users a minute), NONE for an event with a fixed rate
-- or a controller that has not run yet.
local now = ARGV[1]
local conf = redis.call('HMGET', KEYS[6], 'opensAt', 'adaptive.targetLatencyMs', 'rebuilding', 'capacity', 'holdSeconds')
local opensAt = tonumber(conf[1] or '0') or 0
local capacity, holdMs = tonumber(conf[4] or '0') or 0, 1000 * (tonumber(conf[5] or '0') or 0)
local ended = redis.call('ZCOUNT', KEYS[2], '-inf', now)
local holders = redis.call('ZCARD', KEYS[2]) - ended
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
  return tonumber(e[2]) + math.floor((k - 1) / holders) * holdMs
end
local rate = NONE
if conf[2] then
  rate = tonumber(redis.call('HGET', KEYS[7], 'effective') or '') or NONE
end
local drawn = opensAt > 0 and tonumber(now) >= opensAt
local hidden = tonumber(now) < opensAt
local out = {redis.call('ZCARD', KEYS[1]), tonumber(redis.call('HGET', KEYS[4], 'admittedTotal') or '0'), rate}
for i = 2, #ARGV do
  local user = ARGV[i]
  local rank = redis.call('ZRANK', KEYS[1], user)
  if rank then
    redis.call('ZADD', KEYS[3], now, user)
    if hidden then
      rank = RANK_PREQUEUE
    end
  else
    rank = NONE
  end
  local hold = redis.call('ZSCORE', KEYS[2], user)
  local unrecorded = false
  if hold and redis.call('ZSCORE', KEYS[8], user) then
    rank, hold, unrecorded = 0, false, true
  elseif not hold and rank == NONE and redis.call('ZSCORE', KEYS[9], user) then
    hold = 0
  end
  if conf[3] then
    rank = RANK_REBUILDING
  end
  out[#out + 1] = rank
  out[#out + 1] = hold and tonumber(hold) or NONE
  out[#out + 1] = drawn and redis.call('ZRANK', KEYS[5], user) or NONE
  out[#out + 1] = (rank >= 0 and not unrecorded) and slot_at(rank + 1) or NONE
end
return out
