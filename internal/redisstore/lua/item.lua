-- item.lua: one item's state (hold_lib.lua is put ahead of it).
--
-- KEYS[1] config HASH, KEYS[2] holders ZSET, KEYS[3] holds HASH,
-- KEYS[4] sold HASH
-- ARGV[1] item id, ARGV[2] now (unix ms)
--
-- Returns {state, expiresAt, user}: 'sold' with 0 and the buyer; 'held'
-- with the hold's end and the buyer when the hold is live at now
-- (hold_live: a hold whose buyer's slot ended is free, as items.lua
-- shows it); else 'free', 0, ''. NO_EVENT when the event has no
-- configuration.
if redis.call('HEXISTS', KEYS[1], 'capacity') == 0 then
  return NO_EVENT
end
local item, now = ARGV[1], tonumber(ARGV[2])
local buyer = redis.call('HGET', KEYS[4], item)
if buyer then
  return {'sold', 0, buyer}
end
local cur = redis.call('HGET', KEYS[3], item)
if cur then
  local exp, buyer = parse_hold(cur)
  if hold_live(KEYS[2], exp, buyer, now) then
    return {'held', exp, buyer}
  end
end
return {'free', 0, ''}
