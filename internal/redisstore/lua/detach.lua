-- detach.lua: a gateway lets go of the presence of users whose last
-- socket on it closed: their disconnect grace runs from now.
--
-- KEYS[1] seen ZSET, KEYS[2] journal LIST
-- ARGV[1] now (unix ms), ARGV[2] the gateway, ARGV[3..] user ids
--
-- Only a presence the gateway holds (ATTACHED_BASE + it, status.lua) is
-- let go; each is noted in the line's journal ("x", journal_lib.lua), so
-- that another gateway holding a socket of that user takes it again.
-- Returns how many were let go.
local now = tonumber(ARGV[1])
local mine = ATTACHED_BASE + tonumber(ARGV[2])
local n = 0
for i = 3, #ARGV do
  local user = ARGV[i]
  local at = redis.call('ZSCORE', KEYS[1], user)
  if at and tonumber(at) == mine then
    redis.call('ZADD', KEYS[1], now, user)
    journal_note('x', '', user)
    n = n + 1
  end
end
journal_flush(KEYS[2])
return n
