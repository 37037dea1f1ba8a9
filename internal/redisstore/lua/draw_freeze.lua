-- draw_freeze.lua: freezes a chain draw's entries (docs/data.md, "The draw
-- in Redis"), once: their root and count, and the marks that cut them (the
-- applied offsets now, unless ingest.lua cut them first: drawMarks).
--
-- KEYS[1] config HASH, KEYS[2] prequeue ZSET, KEYS[3] offsets HASH
-- ARGV[1] the pre-queue's size the caller read, ARGV[2] the Merkle root it
-- computed over their entries (hex)
-- Returns {root, count, marks} as stored (the caller's, or an earlier
-- freeze's; marks "<partition> <offset> ..."), NO_EVENT, or DRAW_CHANGED
-- when the pre-queue is not the one the caller read (it reads again).
if redis.call('EXISTS', KEYS[1]) == 0 then
  return NO_EVENT
end
local stored = redis.call('HMGET', KEYS[1], 'drawRoot', 'drawCount', 'drawMarks')
if stored[1] then
  return {stored[1], tonumber(stored[2]), stored[3] or ''}
end
if redis.call('ZCARD', KEYS[2]) ~= tonumber(ARGV[1]) then
  return DRAW_CHANGED
end
local marks = stored[3] or table.concat(redis.call('HGETALL', KEYS[3]), ' ')
redis.call('HSET', KEYS[1], 'drawRoot', ARGV[2], 'drawCount', ARGV[1], 'drawMarks', marks)
return {ARGV[2], tonumber(ARGV[1]), marks}
