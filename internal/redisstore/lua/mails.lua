-- mails.lua: the mails due to the people of one event who left an address
-- (address.lua), for the slot monitor after its tick (queue.MailStore;
-- docs/data.md, "Addresses").
--
-- KEYS[1] addresses HASH, KEYS[2] addresscount HASH, KEYS[3] config HASH,
-- KEYS[4] waiting ZSET, KEYS[5] called ZSET, KEYS[6] callplaces HASH,
-- KEYS[7] prequeue ZSET, KEYS[8] stats HASH
-- ARGV[1] now (unix ms), ARGV[2] the most addresses one call looks at for
-- the forgetting
--
-- The call mail: a called user whose window is open; their address is
-- forgotten (it was its last mail). The early mail: a waiting user with at
-- most config away.notifyAhead people ahead, once (the address's stage
-- becomes 1). Then the forgetting: ARGV[2] addresses further along a scan
-- (its cursor kept in stats addressCursor) whose users have no place any
-- more (admitted, left, swept, lapsed) are forgotten, each within a few
-- ticks of the place's end.
--
-- Returns a flat list of quintuples user, address, kind ('call' or
-- 'early'), place score, then the end of the claim window (call) or the
-- people ahead (early); {} when nothing is due or without a configuration.
if redis.call('HLEN', KEYS[1]) == 0 or redis.call('EXISTS', KEYS[3]) == 0 then
  return {}
end
local now = tonumber(ARGV[1])
local out = {}

local function forget(user, value)
  forget_address(KEYS[1], KEYS[2], user, value)
end

local function call(user, value, deadline)
  local place = redis.call('HGET', KEYS[6], user)
  if place and tonumber(deadline) >= now then
    forget(user, value)
    for _, v in ipairs({user, string.sub(value, 3), 'call', tonumber(place), tonumber(deadline)}) do
      out[#out + 1] = v
    end
  end
end

-- The calls: through the smaller of the two sets.
if redis.call('HLEN', KEYS[1]) <= redis.call('ZCARD', KEYS[5]) then
  local all = redis.call('HGETALL', KEYS[1])
  for i = 1, math.min(#all, 2000), 2 do
    local deadline = redis.call('ZSCORE', KEYS[5], all[i])
    if deadline then
      call(all[i], all[i + 1], deadline)
    end
  end
else
  local called = redis.call('ZRANGEBYSCORE', KEYS[5], now, '+inf', 'WITHSCORES', 'LIMIT', 0, 1000)
  for i = 1, #called, 2 do
    local value = redis.call('HGET', KEYS[1], called[i])
    if value then
      call(called[i], value, called[i + 1])
    end
  end
end

local ahead = tonumber(redis.call('HGET', KEYS[3], 'away.notifyAhead') or '0')
if ahead > 0 and redis.call('HLEN', KEYS[1]) > 0 then
  local head = redis.call('ZRANGE', KEYS[4], 0, ahead, 'WITHSCORES')
  local users = {}
  for i = 1, #head, 2 do
    users[#users + 1] = head[i]
  end
  local values = {}
  if #users > 0 then
    values = redis.call('HMGET', KEYS[1], unpack(users))
  end
  for i, value in ipairs(values) do
    if value and string.sub(value, 1, 1) == '0' then
      redis.call('HSET', KEYS[1], users[i], '1' .. string.sub(value, 2))
      for _, v in ipairs({users[i], string.sub(value, 3), 'early', tonumber(head[2 * i]), i - 1}) do
        out[#out + 1] = v
      end
    end
  end
end

local scan = redis.call('HSCAN', KEYS[1], redis.call('HGET', KEYS[8], 'addressCursor') or '0', 'COUNT', ARGV[2])
redis.call('HSET', KEYS[8], 'addressCursor', scan[1])
for i = 1, #scan[2], 2 do
  local user = scan[2][i]
  if not (redis.call('ZSCORE', KEYS[4], user) or redis.call('ZSCORE', KEYS[5], user) or redis.call('ZSCORE', KEYS[7], user)) then
    if redis.call('HEXISTS', KEYS[1], user) == 1 then
      forget(user, scan[2][i + 1])
    end
  end
end
return out
