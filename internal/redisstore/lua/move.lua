-- move.lua: a resume link's use (queue.Resume, queue.Move): the place the
-- link binds moves from its user to the user who opened it, in one step
-- (docs/data.md, "Resume links").
--
-- KEYS[1] config HASH, KEYS[2] waiting ZSET, KEYS[3] active ZSET,
-- KEYS[4] seen ZSET, KEYS[5] served ZSET, KEYS[6] unrecorded ZSET,
-- KEYS[7] called ZSET, KEYS[8] callplaces HASH, KEYS[9] claims ZSET,
-- KEYS[10] moved ZSET, KEYS[11] resumes ZSET, KEYS[12] journal LIST
-- ARGV[1] now (unix ms), ARGV[2] the link's user (from), ARGV[3] the user
-- who opened it (to), ARGV[4] the place's score the link binds,
-- ARGV[5] the link's nonce, ARGV[6] the link's expiry (unix ms),
-- ARGV[7] the keep (ms: the most replicas' clocks may differ)
--
-- The spent nonces (resumes: nonce -> the link's expiry) older than the
-- keep before now are dropped first, as spend.lua's. Then, refusing with
-- nothing changed:
--   RESUME_USED    the nonce is spent (but see "again" below);
--   PLACE_CHANGED  from no longer holds the place: neither waiting at that
--                  score nor called with that place (admitted, lapsed,
--                  swept, left, or joined again since);
--   ALREADY_QUEUED to waits, is called, or holds a slot (live or
--                  unrecorded).
-- With from == to the nonce is spent and nothing moves ('same').
-- Otherwise the place moves ('moved'):
--   waiting: from leaves the line, to takes the same score (the journal
--   notes "-<score> from" and "+<score> to", so that every gateway's
--   followers keep their ranks: gateway.Tracker); from's presence is
--   forgotten; from's served mark becomes at least max(score, now), so no
--   join of theirs sent before the move (a retry, a redelivery) queues
--   them again;
--   called: to takes the turn (called with the same window end,
--   callplaces), with the call's served mark (ZADD GT); from leaves
--   called, callplaces and claims.
-- from is noted in moved at max(now, their served mark) (status.lua tells
-- them their place moved), to leaves moved, the nonce is spent until the
-- link's expiry. 'again': the nonce is spent, to holds the place and from
-- is in moved: the same move asked again (its answer lost, the page
-- reloaded); nothing changes, the caller records it again.
--
-- Returns NO_EVENT, REBUILDING, or one of the codes above; else
-- {kind, score, claim window end (0: waiting), served mark, moved at}.
if redis.call('EXISTS', KEYS[1]) == 0 then
  return NO_EVENT
end
if redis.call('HEXISTS', KEYS[1], 'rebuilding') == 1 then
  return REBUILDING
end
local now, from, to, place = tonumber(ARGV[1]), ARGV[2], ARGV[3], tonumber(ARGV[4])
redis.call('ZREMRANGEBYSCORE', KEYS[11], '-inf', now - tonumber(ARGV[7]))

-- holds returns what user holds of place: 'w' waiting at it with the
-- score as Redis keeps it, 'c' called with it and the window's end, or nil.
local function holds(user)
  local score = redis.call('ZSCORE', KEYS[2], user)
  if score and tonumber(score) == place then
    return 'w', score
  end
  local window = redis.call('ZSCORE', KEYS[7], user)
  if window and tonumber(redis.call('HGET', KEYS[8], user) or '') == place then
    return 'c', window
  end
  return nil
end

local function served(user)
  return tonumber(redis.call('ZSCORE', KEYS[5], user) or '0')
end

if redis.call('ZSCORE', KEYS[11], ARGV[5]) then
  local kind, v = holds(to)
  local at = redis.call('ZSCORE', KEYS[10], from)
  if from ~= to and kind and at then
    local window = kind == 'c' and tonumber(v) or 0
    return {'again', place, window, served(from), tonumber(at)}
  end
  return RESUME_USED
end
local kind, v = holds(from)
if not kind then
  return PLACE_CHANGED
end
if from == to then
  redis.call('ZADD', KEYS[11], ARGV[6], ARGV[5])
  return {'same', place, 0, 0, now}
end
local stay = tonumber(redis.call('ZSCORE', KEYS[3], to) or '')
if redis.call('ZSCORE', KEYS[2], to) or redis.call('ZSCORE', KEYS[7], to) or (stay and stay > now)
    or redis.call('ZSCORE', KEYS[6], to) then
  return ALREADY_QUEUED
end
local window = 0
if kind == 'w' then
  redis.call('ZREM', KEYS[2], from)
  redis.call('ZADD', KEYS[2], v, to)
  journal_note('-', v, from)
  journal_note('+', v, to)
  journal_flush(KEYS[12])
  redis.call('ZREM', KEYS[4], from)
  redis.call('ZADD', KEYS[5], 'GT', math.max(place, now), from)
else
  window = tonumber(v)
  redis.call('ZREM', KEYS[7], from)
  redis.call('HDEL', KEYS[8], from)
  redis.call('ZREM', KEYS[9], from)
  redis.call('ZADD', KEYS[7], v, to)
  redis.call('HSET', KEYS[8], to, ARGV[4])
  redis.call('ZADD', KEYS[5], 'GT', served(from), to)
end
local mark = served(from)
local at = math.max(now, mark)
redis.call('ZADD', KEYS[10], at, from)
redis.call('ZREM', KEYS[10], to)
redis.call('ZADD', KEYS[11], ARGV[6], ARGV[5])
return {'moved', place, window, mark, at}
