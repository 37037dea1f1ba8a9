-- order_lib.lua: the fairness figures counted at each admission, for
-- admit() (admission.lua; run behind admission_keys.lua: K). What they
-- mean: docs/api.md, "Fairness report"; the keys: docs/data.md.
--
-- order ZSET: user -> the place score they were admitted from (their join
-- stamp; a drawn score for a drop's pre-queue), the ORDER_KEPT highest
-- places of the admissions: a person is in it once, at their latest
-- admission. overtaken HASH: user -> how many people admitted before them
-- had a later place (kept only when not 0; dropped with their order entry).
--
-- In stats: orderTotal, the admissions counted; orderPairs, the inverted
-- pairs (A placed before B, B admitted first), each admission adding the
-- people of order placed after it: the sum over admissions, a pair count,
-- not one per late join as ingest.lua's inversions; orderFloor, the
-- highest place ever trimmed from order, and orderBeyond, the admissions
-- placed below it (their count may miss trimmed people: a lower bound);
-- wait:<i> (i = 0 .. WAIT_BUCKETS - 1), admissions whose time in line (now
-- - the place's stamp; from opensAt for a drawn place) was at most 2^i ms,
-- the last bucket everything longer (queue.WaitBuckets).
local ORDER_KEPT = 10000
local WAIT_BUCKETS = 28

-- The step's counts, written once by order_flush.
local orderN, orderPairs, orderBeyond, orderWaits, orderFloor = 0, 0, 0, {}, nil

-- order_seat counts user's admission from place score at now (opensAt:
-- the drop's opening, where a drawn place's time in line starts).
local function order_seat(user, score, now, opensAt)
  local place = string.format('%d', score)
  if orderFloor == nil then
    orderFloor = tonumber(redis.call('HGET', K.stats, 'orderFloor') or '') or false
  end
  local later = redis.call('ZCOUNT', K.order, '(' .. place, '+inf')
  if orderFloor and score < orderFloor then
    orderBeyond = orderBeyond + 1
  end
  local fresh = redis.call('ZADD', K.order, place, user) == 1
  if later > 0 then
    redis.call('HSET', K.overtaken, user, later)
  elseif not fresh then
    redis.call('HDEL', K.overtaken, user) -- an earlier admission's count
  end
  orderN, orderPairs = orderN + 1, orderPairs + later
  local waited = now - (score < 0 and opensAt or score)
  local b, bound = 0, 1
  while b < WAIT_BUCKETS - 1 and bound < waited do
    b, bound = b + 1, bound * 2
  end
  orderWaits[b] = (orderWaits[b] or 0) + 1
end

-- order_flush writes the step's counts and trims order to ORDER_KEPT,
-- dropping the trimmed people's overtaken counts.
local function order_flush()
  if orderN == 0 then
    return
  end
  redis.call('HINCRBY', K.stats, 'orderTotal', orderN)
  if orderPairs > 0 then
    redis.call('HINCRBY', K.stats, 'orderPairs', orderPairs)
  end
  if orderBeyond > 0 then
    redis.call('HINCRBY', K.stats, 'orderBeyond', orderBeyond)
  end
  for b, count in pairs(orderWaits) do
    redis.call('HINCRBY', K.stats, 'wait:' .. b, count)
  end
  local over = redis.call('ZCARD', K.order) - ORDER_KEPT
  if over > 0 then
    local gone = redis.call('ZRANGE', K.order, 0, over - 1, 'WITHSCORES')
    redis.call('ZREMRANGEBYRANK', K.order, 0, over - 1)
    for i = 1, #gone, 2000 do
      local users = {}
      for j = i, math.min(i + 1998, #gone), 2 do
        users[#users + 1] = gone[j]
      end
      redis.call('HDEL', K.overtaken, unpack(users))
    end
    if not orderFloor or tonumber(gone[#gone]) > orderFloor then
      redis.call('HSET', K.stats, 'orderFloor', gone[#gone])
    end
  end
  orderN, orderPairs, orderBeyond, orderWaits, orderFloor = 0, 0, 0, {}, nil
end
