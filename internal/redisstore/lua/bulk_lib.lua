-- bulk_lib.lua: reading and writing a batch's users in bulk, one command per
-- key for the whole batch, a bounded number of arguments at once (Redis's
-- Lua unpacks at most a few thousand values). Prepended to ingest.lua.

-- BULK_ARGS bounds the arguments of one bulk command.
local BULK_ARGS = 4000

-- bulk_scores returns ZMSCORE of the sorted set at key for ARGV[from + 1 ..
-- from + n], as an array by message (false: not a member).
local function bulk_scores(key, from, n)
  if n == 0 then
    return {}
  elseif n <= BULK_ARGS then
    return redis.call('ZMSCORE', key, unpack(ARGV, from + 1, from + n))
  end
  local at = {}
  for i = 1, n, BULK_ARGS do
    local got = redis.call('ZMSCORE', key, unpack(ARGV, from + i, from + math.min(i + BULK_ARGS - 1, n)))
    for j = 1, #got do
      at[i + j - 1] = got[j]
    end
  end
  return at
end

-- bulk_served is bulk_scores of the served set at key. A small served set
-- (a listpack, whose every lookup is a scan of it) is read whole instead,
-- once, and none is read when it is empty (before the first admission).
local function bulk_served(key, from, n)
  local count = redis.call('ZCARD', key)
  if count == 0 then
    return {}
  elseif count > 128 or n <= 8 then
    return bulk_scores(key, from, n)
  end
  local all, marks, at = redis.call('ZRANGE', key, 0, LAST, 'WITHSCORES'), {}, {}
  for i = 1, #all, 2 do
    marks[all[i]] = all[i + 1]
  end
  for i = 1, n do
    at[i] = marks[ARGV[from + i]] or false
  end
  return at
end

-- bulk_write runs cmd on key with args (pairs), a bounded number at once.
local function bulk_write(cmd, key, args, flag)
  for i = 1, #args, BULK_ARGS do
    local j = math.min(i + BULK_ARGS - 1, #args)
    if flag then
      redis.call(cmd, key, flag, unpack(args, i, j))
    else
      redis.call(cmd, key, unpack(args, i, j))
    end
  end
end
