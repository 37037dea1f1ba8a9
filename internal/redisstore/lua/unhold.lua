-- unhold.lua: compare-and-delete: give an item back if the caller holds it
-- (hold_lib.lua is put ahead of it).
--
-- KEYS[1] config HASH, KEYS[2] holders ZSET, KEYS[3] holds HASH,
-- KEYS[4] sold HASH, KEYS[5] items HASH
-- ARGV[1] user id, ARGV[2] item id, ARGV[3] now (unix ms)
--
-- Returns {removed, live}: removed 1 when the user's hold (live or dead)
-- was deleted, live 1 when it was live; {0, 0} when nobody holds the item
-- live and it is not sold (nothing to give back). NOT_HOLDER when another
-- user holds it live, or it is sold: nothing changed. REBUILDING while the
-- event is rebuilt.
if redis.call('HEXISTS', KEYS[1], 'rebuilding') == 1 then
  return REBUILDING
end
local user, item, now = ARGV[1], ARGV[2], tonumber(ARGV[3])
if redis.call('HEXISTS', KEYS[4], item) == 1 then
  return NOT_HOLDER
end
local cur = redis.call('HGET', KEYS[3], item)
if not cur then
  return {0, 0}
end
local exp, buyer = parse_hold(cur)
if buyer == user then
  redis.call('HDEL', KEYS[3], item)
  local kept = {}
  for _, it in ipairs(user_items(KEYS[5], user)) do
    if it ~= item then
      kept[#kept + 1] = it
    end
  end
  set_user_items(KEYS[5], user, kept)
  if exp > now then
    return {1, 1}
  end
  return {1, 0}
end
if hold_live(KEYS[2], exp, buyer, now) then
  return NOT_HOLDER
end
return {0, 0}
