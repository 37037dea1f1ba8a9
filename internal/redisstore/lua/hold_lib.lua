-- hold_lib.lua: reading and ending holds, put ahead of hold.lua,
-- unhold.lua, confirm.lua, item.lua and items.lua, and in the admission
-- step ahead of admission.lua (its admit() ends an expired buyer's holds),
-- so also ahead of tick.lua, ingest.lua and release.lua (scripts.go).
--
-- A hold is the HoldsKey value "<expiresAt>|<user>": the end of the
-- buyer's slot when the hold was taken (unix ms), and the buyer.

-- parse_hold returns the end and the buyer of a hold's value.
local function parse_hold(v)
  local bar = string.find(v, '|', 1, true)
  return tonumber(string.sub(v, 1, bar - 1)), string.sub(v, bar + 1)
end

-- user_items returns the items user holds or bought, from the items HASH
-- key (user -> the items, separated by spaces: no item id has one).
local function user_items(key, user)
  local out = {}
  local v = redis.call('HGET', key, user)
  if v then
    for it in string.gmatch(v, '%S+') do
      out[#out + 1] = it
    end
  end
  return out
end

-- set_user_items writes user's items (none: the field goes).
local function set_user_items(key, user, items)
  if #items == 0 then
    redis.call('HDEL', key, user)
  else
    redis.call('HSET', key, user, table.concat(items, ' '))
  end
end

-- hold_live reports whether a hold ending at exp taken by buyer is live
-- at now: its end ahead, and its buyer still holding a slot (holders ZSET)
-- beyond now. A slot that expired, or a new admission after it, leaves the
-- hold dead without a write.
local function hold_live(holders, exp, buyer, now)
  if exp <= now then
    return false
  end
  local slot = redis.call('ZSCORE', holders, buyer)
  return slot ~= false and tonumber(slot) > now
end

-- end_holds ends user's holds because their slot ended (released, or
-- expired and taken out of holders): their holds not confirmed are deleted,
-- and their items HASH entry keeps only what they bought. Returns how many
-- holds it deleted: holds that ended without a confirm or a DELETE
-- (waitq_holds_expired_total).
local function end_holds(holds, items, sold, user)
  local n, bought = 0, {}
  for _, it in ipairs(user_items(items, user)) do
    local v = redis.call('HGET', holds, it)
    if v then
      local _, buyer = parse_hold(v)
      if buyer == user then
        redis.call('HDEL', holds, it)
        n = n + 1
      end
    end
    if redis.call('HGET', sold, it) == user then
      bought[#bought + 1] = it
    end
  end
  set_user_items(items, user, bought)
  return n
end
