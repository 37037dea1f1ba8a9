-- draw_mark.lua: marks a chain draw's steps recorded (docs/data.md, "The
-- draw in Redis"): their records are in the log, so they may be told: the
-- freeze (the root published, the seed revealed: drawRecorded) and the
-- draw (drawnAt: the line admitted, the draw published). Only the steps
-- recorded are marked: those still stored as the records named them.
--
-- KEYS[1] config HASH
-- ARGV[1] the root of the drawfrozen record written ('' none), ARGV[2] the
-- time of the drawmade record written ('' none)
-- Returns OK, NO_EVENT, or REBUILDING (nothing marked: the rebuild writes
-- the draw the log holds).
local conf = redis.call('HMGET', KEYS[1], 'capacity', 'rebuilding', 'drawRoot', 'drawMadeAt')
if not conf[1] then
  return NO_EVENT
end
if conf[2] then
  return REBUILDING
end
if ARGV[1] ~= '' and conf[3] == ARGV[1] then
  redis.call('HSET', KEYS[1], 'drawRecorded', '1')
end
if ARGV[2] ~= '' and conf[4] == ARGV[2] then
  redis.call('HSET', KEYS[1], 'drawnAt', ARGV[2])
end
return OK
