-- sweep.lua: remove waiting users whose connection has been gone too long.
--
-- KEYS[1] waiting ZSET, KEYS[2] seen ZSET, KEYS[3] config HASH,
-- KEYS[4] journal LIST, KEYS[5] gateways ZSET
-- ARGV[1] cutoff (unix ms): presence older than this has outlived the grace
-- ARGV[2] limit: the most users one call removes
--
-- A user's presence (seen) is the time their last socket closed or a poll
-- read them, or ATTACHED_BASE + g while gateway g holds a socket of theirs
-- (status.lua, detach.lua): then it is g's, and ends when g stops telling
-- it is alive (KEYS[5]: g -> the last time it read the line, line.lua).
-- The users of a gateway silent since before the cutoff have been gone as
-- long as it, and are removed like the others.
--
-- Users who never connected have no presence and keep their place. Nothing
-- is removed while the event is being rebuilt (config.rebuilding). Each
-- removal is noted in the line's journal (journal_lib.lua).
-- Returns the users removed from the line and their places, a flat list of
-- pairs user, score.
if redis.call('HEXISTS', KEYS[3], 'rebuilding') == 1 then
  return {}
end
local limit = tonumber(ARGV[2])
local out = {}
local function remove(user)
  redis.call('ZREM', KEYS[2], user)
  local score = redis.call('ZSCORE', KEYS[1], user)
  if score then
    redis.call('ZREM', KEYS[1], user)
    journal_note('-', score, user)
    out[#out + 1] = user
    out[#out + 1] = tonumber(score)
  end
end
for _, user in ipairs(redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', '(' .. ARGV[1], 'LIMIT', 0, limit)) do
  remove(user)
end
for _, g in ipairs(redis.call('ZRANGEBYSCORE', KEYS[5], '-inf', '(' .. ARGV[1], 'LIMIT', 0, 16)) do
  local room = limit - #out / 2
  if room <= 0 then
    break
  end
  local at = ATTACHED_BASE + tonumber(g)
  local users = redis.call('ZRANGEBYSCORE', KEYS[2], at, at, 'LIMIT', 0, room)
  for _, user in ipairs(users) do
    remove(user)
  end
  if #users < room then
    redis.call('ZREM', KEYS[5], g)
  end
end
journal_flush(KEYS[4])
return out
