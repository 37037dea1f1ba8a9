-- address.lua: keep or forget the address a person left to be mailed when
-- called (queue.AddressStore; docs/data.md, "Addresses").
--
-- KEYS[1] addresses HASH (user -> stage|address: stage 0 before any mail,
-- 1 once the early mail went), KEYS[2] addresscount HASH (address in lower
-- case -> users who left it), KEYS[3] config HASH, KEYS[4] waiting ZSET,
-- KEYS[5] called ZSET, KEYS[6] prequeue ZSET
-- ARGV[1] user, ARGV[2] the address ('' : forget the user's address),
-- ARGV[3] its key (lower case), ARGV[4] the most users per address
--
-- Returns OK when kept, NO_EVENT without a configuration, NO_PLACE when the
-- user neither waits (line or pre-queue) nor is called, ADDRESS_LIMIT when
-- ARGV[4] other users left the address (nothing changed on any refusal);
-- forgetting returns 1 when there was an address, else 0.
local user = ARGV[1]

-- forget removes user's address value and counts its address down.
local function forget(value)
  forget_address(KEYS[1], KEYS[2], user, value)
end

local old = redis.call('HGET', KEYS[1], user)
if ARGV[2] == '' then
  if not old then
    return 0
  end
  forget(old)
  return 1
end
if redis.call('EXISTS', KEYS[3]) == 0 then
  return NO_EVENT
end
if not (redis.call('ZSCORE', KEYS[4], user) or redis.call('ZSCORE', KEYS[5], user) or redis.call('ZSCORE', KEYS[6], user)) then
  return NO_PLACE
end
local stage = '0'
if old then
  if string.lower(string.sub(old, 3)) == ARGV[3] then
    redis.call('HSET', KEYS[1], user, string.sub(old, 1, 2) .. ARGV[2])
    return OK
  end
  stage = string.sub(old, 1, 1)
end
if tonumber(redis.call('HGET', KEYS[2], ARGV[3]) or '0') >= tonumber(ARGV[4]) then
  return ADDRESS_LIMIT
end
if old then
  forget(old)
end
redis.call('HSET', KEYS[1], user, stage .. '|' .. ARGV[2])
redis.call('HINCRBY', KEYS[2], ARGV[3], 1)
return OK
