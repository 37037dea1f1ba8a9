-- sweep.lua: remove waiting users whose connection has been gone too long.
--
-- KEYS[1] waiting ZSET, KEYS[2] seen ZSET
-- ARGV[1] cutoff (unix ms): presence older than this has outlived the grace
-- ARGV[2] limit: the most users one call removes
--
-- Users who never connected have no presence and keep their place.
-- Returns the users removed from the line.
local gone = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', '(' .. ARGV[1], 'LIMIT', 0, tonumber(ARGV[2]))
local out = {}
for _, user in ipairs(gone) do
  redis.call('ZREM', KEYS[2], user)
  if redis.call('ZREM', KEYS[1], user) == 1 then
    out[#out + 1] = user
  end
end
return out
