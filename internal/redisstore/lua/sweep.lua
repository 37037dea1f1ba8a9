-- sweep.lua: remove waiting users whose connection has been gone too long.
--
-- KEYS[1] waiting ZSET, KEYS[2] seen ZSET, KEYS[3] config HASH,
-- KEYS[4] journal LIST, KEYS[5] gateways ZSET
-- ARGV[1] cutoff (unix ms): presence older than this has outlived the grace
-- ARGV[2] limit: the most users one call removes
-- ARGV[3] silent cutoff (unix ms): a gateway that has not read the line
-- since before it is gone
-- ARGV[4] now (unix ms): an event that keeps places while away
-- (config away.keepSeconds, queue.Away) removes only the presences older
-- than now - keepSeconds (and than the cutoff)
--
-- A user's presence (seen) is the time their last socket closed or a poll
-- read them, or ATTACHED_BASE + g while gateway g holds a socket of theirs
-- (status.lua, detach.lua): then it is g's, and ends when g stops telling
-- it is alive (KEYS[5]: g -> the last time it read the line, line.lua).
--
-- First the users gone since before the cutoff are removed. Then the
-- presences held by gateways silent since before the silent cutoff are let
-- go as detach.lua does, as if at the silent cutoff: each is noted in the
-- journal ("x"), so that a gateway holding another socket of the user (the
-- user reconnected there, or has a second tab there) takes it again, and
-- the others are removed a grace after it, by a later call. A gateway
-- whose presences are all let go is forgotten. Letting go, not removing,
-- is what keeps a user whose presence a gateway that then died took last
-- (the socket there was their newest) while another socket of theirs
-- lives on.
--
-- Users who never connected have no presence and keep their place. Nothing
-- is removed or let go while the event is being rebuilt
-- (config.rebuilding). Each removal is noted in the line's journal
-- (journal_lib.lua).
-- Returns the users removed from the line and their places, a flat list of
-- pairs user, score.
if redis.call('HEXISTS', KEYS[3], 'rebuilding') == 1 then
  return {}
end
local limit = tonumber(ARGV[2])
local silent = tonumber(ARGV[3])
local cutoff = tonumber(ARGV[1])
local keep = tonumber(redis.call('HGET', KEYS[3], 'away.keepSeconds') or '')
if keep and ARGV[4] then
  cutoff = math.min(cutoff, tonumber(ARGV[4]) - keep * 1000)
end
local out = {}
for _, user in ipairs(redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', '(' .. string.format('%d', cutoff), 'LIMIT', 0, limit)) do
  redis.call('ZREM', KEYS[2], user)
  local score = redis.call('ZSCORE', KEYS[1], user)
  if score then
    redis.call('ZREM', KEYS[1], user)
    journal_note('-', score, user)
    out[#out + 1] = user
    out[#out + 1] = tonumber(score)
  end
end
local room = limit
for _, g in ipairs(redis.call('ZRANGEBYSCORE', KEYS[5], '-inf', '(' .. silent, 'LIMIT', 0, 16)) do
  if room <= 0 then
    break
  end
  local at = ATTACHED_BASE + tonumber(g)
  local users = redis.call('ZRANGEBYSCORE', KEYS[2], at, at, 'LIMIT', 0, room)
  for _, user in ipairs(users) do
    redis.call('ZADD', KEYS[2], silent, user)
    journal_note('x', '', user)
  end
  room = room - #users
  if room > 0 then
    redis.call('ZREM', KEYS[5], g)
  end
end
journal_flush(KEYS[4])
return out
