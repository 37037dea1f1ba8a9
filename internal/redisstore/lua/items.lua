-- items.lua: the event's items held live or sold, for a seat map
-- (hold_lib.lua is put ahead of it).
--
-- KEYS[1] holders ZSET, KEYS[2] holds HASH, KEYS[3] sold HASH
-- ARGV[1] now (unix ms)
--
-- Returns a flat list item, state ('held' or 'sold'); items absent are
-- free. Dead holds are not listed (they are left to be replaced).
local out = {}
local sold = redis.call('HKEYS', KEYS[3])
for _, it in ipairs(sold) do
  out[#out + 1] = it
  out[#out + 1] = 'sold'
end
local holds = redis.call('HGETALL', KEYS[2])
local now = tonumber(ARGV[1])
for i = 1, #holds, 2 do
  local exp, buyer = parse_hold(holds[i + 1])
  if hold_live(KEYS[1], exp, buyer, now) then
    out[#out + 1] = holds[i]
    out[#out + 1] = 'held'
  end
end
return out
