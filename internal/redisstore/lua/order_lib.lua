-- order_lib.lua: the fairness figures counted at each admission, for
-- admit() (admission.lua; run behind admission_keys.lua: K). What they
-- mean: docs/api.md, "Fairness report"; the keys: docs/data.md.
--
-- order ZSET: user -> the place score they were admitted from (their join
-- stamp; a drawn score for a drop's pre-queue), for the latest ORDER_KEPT
-- admissions: a person is in it once, at their latest admission.
-- overtaken HASH: user -> how many people admitted before them had a later
-- place (kept only when not 0). admissions LIST: the users of those
-- admissions in order, oldest first; past ORDER_KEPT the oldest leave the
-- three keys (a person admitted again leaves with their older admission).
--
-- In stats: orderTotal, the admissions counted; orderPairs, the inverted
-- pairs (A placed before B, B admitted first), each admission adding the
-- people of order placed after it: the sum over admissions, a pair count,
-- not one per late join as ingest.lua's inversions; orderFloor, the
-- highest place that ever left order (the oldest admissions', or a
-- person's earlier place when admitted again), and orderBeyond, the
-- admissions placed below it (their count may miss people no longer in
-- order: a lower bound);
-- wait:<i> (i = 0 .. WAIT_BUCKETS - 1), admissions whose time in line (now
-- - the place's stamp; from opensAt for a drawn place) was at most 2^i ms,
-- the last bucket everything longer (queue.WaitBuckets).
local ORDER_KEPT = 10000
local WAIT_BUCKETS = 28

-- The step's counts, written once by order_flush.
local orderN, orderPairs, orderBeyond, orderWaits, orderFloor, orderUsers = 0, 0, 0, {}, nil, {}
-- orderFloorRead is stats.orderFloor as read (false: none), orderFloor as raised.
local orderFloorRead

-- order_raise raises orderFloor to p: a place no longer in order.
local function order_raise(p)
  if p and (not orderFloor or p > orderFloor) then
    orderFloor = p
  end
end

-- order_seat counts user's admission from place score at now (opensAt:
-- the drop's opening, where a drawn place's time in line starts).
local function order_seat(user, score, now, opensAt)
  local place = string.format('%d', score)
  if orderFloor == nil then
    orderFloor = tonumber(redis.call('HGET', K.stats, 'orderFloor') or '') or false
    orderFloorRead = orderFloor
  end
  local later = redis.call('ZCOUNT', K.order, '(' .. place, '+inf')
  if orderFloor and score < orderFloor then
    orderBeyond = orderBeyond + 1
  end
  local fresh = redis.call('ZADD', K.order, 'NX', place, user) == 1
  if not fresh then
    -- Admitted again: the earlier admission's place leaves order, as if let go.
    order_raise(tonumber(redis.call('ZSCORE', K.order, user)))
    redis.call('ZADD', K.order, place, user)
  end
  if later > 0 then
    redis.call('HSET', K.overtaken, user, later)
  elseif not fresh then
    redis.call('HDEL', K.overtaken, user) -- an earlier admission's count
  end
  orderN, orderPairs = orderN + 1, orderPairs + later
  orderUsers[orderN] = user
  local waited = now - (score < 0 and opensAt or score)
  local b, bound = 0, 1
  while b < WAIT_BUCKETS - 1 and bound < waited do
    b, bound = b + 1, bound * 2
  end
  orderWaits[b] = (orderWaits[b] or 0) + 1
end

-- order_flush writes the step's counts and keeps the latest ORDER_KEPT
-- admissions, raising orderFloor to the highest place it lets go.
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
  local kept = 0
  for i = 1, orderN, 1000 do
    kept = redis.call('RPUSH', K.admissions, unpack(orderUsers, i, math.min(i + 999, orderN)))
  end
  for _ = 1, math.ceil((kept - ORDER_KEPT) / 1000) do
    local gone = redis.call('LPOP', K.admissions, math.min(kept - ORDER_KEPT, 1000))
    kept = kept - #gone
    for _, place in ipairs(redis.call('ZMSCORE', K.order, unpack(gone))) do
      order_raise(tonumber(place))
    end
    redis.call('ZREM', K.order, unpack(gone))
    redis.call('HDEL', K.overtaken, unpack(gone))
  end
  if orderFloor and orderFloor ~= orderFloorRead then
    redis.call('HSET', K.stats, 'orderFloor', string.format('%d', orderFloor))
  end
  orderN, orderPairs, orderBeyond, orderWaits, orderFloor, orderUsers = 0, 0, 0, {}, nil, {}
end
