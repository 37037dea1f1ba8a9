-- address_lib.lua: the addresses left to be mailed when a turn comes
-- (address.lua, mails.lua): the addresses HASH (user -> "<stage>|<address>")
-- and the addresscount HASH (lower-cased address -> how many users left it).

-- forget_address removes user's address value from addresses and counts
-- its address down in counts.
local function forget_address(addresses, counts, user, value)
  redis.call('HDEL', addresses, user)
  local key = string.lower(string.sub(value, 3))
  local n = tonumber(redis.call('HGET', counts, key) or '0')
  if n <= 1 then
    redis.call('HDEL', counts, key)
  else
    redis.call('HSET', counts, key, n - 1)
  end
end
