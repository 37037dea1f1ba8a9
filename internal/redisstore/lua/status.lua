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
-- Returns {total waiting, admittedTotal, rate, rank1, hold1, drawn1, rank2,
-- ...} where rate is an adaptive event's effective rate (control.effective,
-- users a minute), NONE for an event with a fixed rate or a controller that
-- has not run yet.
local now = ARGV[1]
local conf = redis.call('HMGET', KEYS[6], 'opensAt', 'adaptive.targetLatencyMs', 'rebuilding')
local opensAt = tonumber(conf[1] or '0') or 0
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
  if hold and redis.call('ZSCORE', KEYS[8], user) then
    rank, hold = 0, false
  elseif not hold and rank == NONE and redis.call('ZSCORE', KEYS[9], user) then
    hold = 0
  end
  if conf[3] then
    rank = RANK_REBUILDING
  end
  out[#out + 1] = rank
  out[#out + 1] = hold and tonumber(hold) or NONE
  out[#out + 1] = drawn and redis.call('ZRANK', KEYS[5], user) or NONE
end
return out
