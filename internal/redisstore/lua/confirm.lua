-- confirm.lua: sell an item to the user holding it (hold_lib.lua is put
-- ahead of it).
--
-- KEYS[1] config HASH, KEYS[2] holders ZSET, KEYS[3] unrecorded ZSET,
-- KEYS[4] holds HASH, KEYS[5] sold HASH, KEYS[6] items HASH
-- ARGV[1] user id, ARGV[2] item id, ARGV[3] now (unix ms)
--
-- The user must hold the item live and their slot. The hold becomes a
-- sale (sold HASH), which no slot's end frees; the item stays among the
-- user's items, counted against maxItemsPerUser.
--
-- Returns {sold}: 1 when sold now, 0 when it was sold to the user already.
-- Else REBUILDING, ITEM_SOLD (sold to another), NO_SLOT or NOT_HOLDER;
-- nothing changed.
if redis.call('HEXISTS', KEYS[1], 'rebuilding') == 1 then
  return REBUILDING
end
local user, item, now = ARGV[1], ARGV[2], tonumber(ARGV[3])
local buyer = redis.call('HGET', KEYS[5], item)
if buyer == user then
  return {0}
elseif buyer then
  return ITEM_SOLD
end
local slot = redis.call('ZSCORE', KEYS[2], user)
if not slot or tonumber(slot) <= now or redis.call('ZSCORE', KEYS[3], user) then
  return NO_SLOT
end
local cur = redis.call('HGET', KEYS[4], item)
if not cur then
  return NOT_HOLDER
end
local exp, buyer = parse_hold(cur)
if buyer ~= user or exp <= now then
  return NOT_HOLDER
end
redis.call('HDEL', KEYS[4], item)
redis.call('HSET', KEYS[5], item, user)
local items = user_items(KEYS[6], user)
local listed = false
for _, it in ipairs(items) do
  listed = listed or it == item
end
if not listed then
  items[#items + 1] = item
  set_user_items(KEYS[6], user, items)
end
return {1}
