-- unsell.lua: undo an item's sale (hold_lib.lua is put ahead of it).
--
-- KEYS[1] config HASH, KEYS[2] sold HASH, KEYS[3] items HASH
-- ARGV[1] item id, ARGV[2] the buyer whose sale to undo (its unsold
-- record is written before: Store.Unsell)
--
-- The item leaves the sold HASH and its buyer's items: free again, to be
-- held by anyone, and no longer counted against the buyer's
-- maxItemsPerUser.
--
-- Returns {1, buyer} when the sale was undone; {0, buyer} when the item is
-- sold to another buyer, {0, ''} when it is not sold (nothing changed). NO_EVENT when the event has no
-- configuration, REBUILDING while it is rebuilt.
if redis.call('HEXISTS', KEYS[1], 'rebuilding') == 1 then
  return REBUILDING
end
if redis.call('HEXISTS', KEYS[1], 'capacity') == 0 then
  return NO_EVENT
end
local item = ARGV[1]
local buyer = redis.call('HGET', KEYS[2], item)
if not buyer then
  return {0, ''}
elseif buyer ~= ARGV[2] then
  return {0, buyer}
end
redis.call('HDEL', KEYS[2], item)
local kept = {}
for _, it in ipairs(user_items(KEYS[3], buyer)) do
  if it ~= item then
    kept[#kept + 1] = it
  end
end
set_user_items(KEYS[3], buyer, kept)
return {1, buyer}
