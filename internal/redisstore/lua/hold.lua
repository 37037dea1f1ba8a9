-- hold.lua: hold an item for a user holding a slot (hold_lib.lua is put
-- ahead of it).
--
-- KEYS[1] config HASH, KEYS[2] holders ZSET, KEYS[3] unrecorded ZSET,
-- KEYS[4] holds HASH, KEYS[5] sold HASH, KEYS[6] items HASH
-- ARGV[1] user id, ARGV[2] item id, ARGV[3] now (unix ms)
--
-- The user must hold a recorded slot ending after now. An item sold is
-- refused, one held live by another user too; a dead hold of another is
-- replaced. The user's live holds and purchases are counted (their dead
-- entries removed from the items HASH) against config.maxItemsPerUser (0 or unset:
-- 1). The hold ends with the user's slot: its value is the slot's end.
--
-- Returns {created, expiresAt, replaced}: created 1 for a new hold, 0 when
-- the user held the item already (its end set to the slot's again);
-- replaced 1 when a dead hold of another user was replaced. Else
-- REBUILDING (config.rebuilding), NO_EVENT (no configuration), NO_SLOT,
-- ITEM_SOLD, ITEM_HELD or HOLD_LIMIT; nothing changed (HOLD_LIMIT drops
-- the user's dead entries from the items HASH, which changes no count).
if redis.call('HEXISTS', KEYS[1], 'rebuilding') == 1 then
  return REBUILDING
end
local limit = redis.call('HGET', KEYS[1], 'maxItemsPerUser')
if redis.call('HEXISTS', KEYS[1], 'capacity') == 0 then
  return NO_EVENT
end
local user, item, now = ARGV[1], ARGV[2], tonumber(ARGV[3])
local slot = redis.call('ZSCORE', KEYS[2], user)
if not slot or tonumber(slot) <= now or redis.call('ZSCORE', KEYS[3], user) then
  return NO_SLOT
end
slot = tonumber(slot)
if redis.call('HEXISTS', KEYS[5], item) == 1 then
  return ITEM_SOLD
end
local value = slot .. '|' .. user
local replaced = 0
local cur = redis.call('HGET', KEYS[4], item)
if cur then
  local exp, buyer = parse_hold(cur)
  if buyer == user and exp > now then
    redis.call('HSET', KEYS[4], item, value)
    return {0, slot, 0}
  end
  if buyer ~= user and hold_live(KEYS[2], exp, buyer, now) then
    return ITEM_HELD
  end
  if buyer ~= user then
    replaced = 1
  end
end
local kept = {}
for _, it in ipairs(user_items(KEYS[6], user)) do
  local v = redis.call('HGET', KEYS[4], it)
  local mine = false
  if redis.call('HGET', KEYS[5], it) == user then
    mine = true
  elseif v then
    local exp, buyer = parse_hold(v)
    mine = buyer == user and exp > now
  end
  if mine and it ~= item then
    kept[#kept + 1] = it
  end
end
local n = #kept
limit = tonumber(limit) or 0
if limit < 1 then
  limit = 1
end
if n >= limit then
  set_user_items(KEYS[6], user, kept)
  return HOLD_LIMIT
end
redis.call('HSET', KEYS[4], item, value)
kept[#kept + 1] = item
set_user_items(KEYS[6], user, kept)
return {1, slot, replaced}
