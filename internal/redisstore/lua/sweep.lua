-- sweep.lua: remove waiting users whose connection has been gone too long.
--
-- KEYS[1] waiting ZSET, KEYS[2] seen ZSET, KEYS[3] config HASH
-- ARGV[1] cutoff (unix ms): presence older than this has outlived the grace
-- ARGV[2] limit: the most users one call removes
--
-- Users who never connected have no presence and keep their place. Nothing
-- is removed while the event is being rebuilt (config.rebuilding).
-- Returns the users removed from the line and their places, a flat list of
-- pairs user, score.
if redis.call('HEXISTS', KEYS[3], 'rebuilding') == 1 then
  return {}
end
local gone = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', '(' .. ARGV[1], 'LIMIT', 0, tonumber(ARGV[2]))
local out = {}
for _, user in ipairs(gone) do
  redis.call('ZREM', KEYS[2], user)
  local score = redis.call('ZSCORE', KEYS[1], user)
  if score then
    redis.call('ZREM', KEYS[1], user)
    out[#out + 1] = user
    out[#out + 1] = tonumber(score)
  end
end
return out
