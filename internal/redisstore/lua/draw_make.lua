-- draw_make.lua: makes a chain draw (docs/data.md, "The draw in Redis"),
-- once: every frozen entry's drawn place moves to its number under the
-- effective seed, in the pre-queue and, for those still waiting at a drawn
-- place, in the line; the line's journal starts a new epoch, so every
-- gateway learns every place again. The draw is made (drawMadeAt), not yet
-- told: draw_mark.lua sets drawnAt once its record is in the log, and only
-- then is the line admitted and the draw published.
--
-- KEYS[1] config HASH, KEYS[2] prequeue ZSET, KEYS[3] waiting ZSET,
-- KEYS[4] journal LIST
-- ARGV[1] now, ARGV[2] the entry root the caller drew under, ARGV[3] the
-- public value (hex; '' missed), then pairs user, drawn score
-- Returns OK, NO_EVENT, PUBLIC_VALUE_SET (made already: nothing changed),
-- DRAW_CHANGED (the entries froze under another root: nothing changed).
local conf = redis.call('HMGET', KEYS[1], 'capacity', 'drawMadeAt', 'drawRoot')
if not conf[1] then
  return NO_EVENT
end
if conf[2] then
  return PUBLIC_VALUE_SET
end
if conf[3] ~= ARGV[2] then
  return DRAW_CHANGED
end
for i = 4, #ARGV, 2 do
  local user, score = ARGV[i], ARGV[i + 1]
  redis.call('ZADD', KEYS[2], 'XX', score, user)
  local cur = redis.call('ZSCORE', KEYS[3], user)
  if cur and tonumber(cur) < 0 then
    redis.call('ZADD', KEYS[3], 'XX', score, user)
  end
end
redis.call('DEL', KEYS[4])
journal_head(KEYS[4])
redis.call('HSET', KEYS[1], 'drawValue', ARGV[3], 'drawMadeAt', ARGV[1])
return OK
