-- away_lib.lua: the turns of people who were away when their turn came
-- (queue.Away), for admit() (admission.lua) and tick.lua. Run behind
-- admission_keys.lua (K).
--
-- called ZSET: user -> the end of their claim window (unix ms);
-- callplaces HASH: user -> the place score they left the line at;
-- claims ZSET: user -> that place score, for the called who came back
-- (status.lua adds them), so that claims go in line order;
-- lapsed ZSET: user -> when their turn lapsed (unix ms).

-- call_turn calls user, popped from the line at place (the score as Redis
-- gave it) while away: their turn waits for them for claim seconds, their
-- served mark is served, their presence is forgotten. Appends the quad
-- user, place, end of the window, served mark to calls.
local function call_turn(now, user, place, served, claim, calls)
  local deadline = now + claim * 1000
  redis.call('ZADD', K.called, deadline, user)
  redis.call('HSET', K.callplaces, user, place)
  redis.call('ZADD', K.served, served, user)
  redis.call('ZREM', K.seen, user)
  redis.call('HINCRBY', K.stats, 'calledTotal', 1)
  calls[#calls + 1] = user
  calls[#calls + 1] = tonumber(place)
  calls[#calls + 1] = deadline
  calls[#calls + 1] = served
end

-- claim_turns admits, through seat(user, place score, served mark), up to n
-- of the called who came back, in line order. Back within the window (a
-- claim is only made while called: status.lua), the turn is theirs until
-- a slot frees for them, however long capacity, rate or a pause keep
-- them: lapse_turns passes them over.
local function claim_turns(n, now, seat)
  if n <= 0 then
    return
  end
  for _, user in ipairs(redis.call('ZRANGE', K.claims, 0, n - 1)) do
    redis.call('ZREM', K.claims, user)
    local place = tonumber(redis.call('HGET', K.callplaces, user) or '')
    if redis.call('ZSCORE', K.called, user) and place then
      redis.call('ZREM', K.called, user)
      redis.call('HDEL', K.callplaces, user)
      redis.call('HINCRBY', K.stats, 'claimedTotal', 1)
      seat(user, place, now)
    end
  end
end

-- lapse_turns ends up to limit turns whose claim window closed before now
-- and whose user did not come back (not in claims): the users leave
-- called, and are noted in lapsed at now. Returns them.
local function lapse_turns(now, limit)
  local out = {}
  for _, user in ipairs(redis.call('ZRANGEBYSCORE', K.called, '-inf', '(' .. now, 'LIMIT', 0, limit)) do
    if not redis.call('ZSCORE', K.claims, user) then
      redis.call('ZREM', K.called, user)
      redis.call('HDEL', K.callplaces, user)
      redis.call('ZADD', K.lapsed, now, user)
      out[#out + 1] = user
    end
  end
  if #out > 0 then
    redis.call('HINCRBY', K.stats, 'lapsedTotal', #out)
  end
  return out
end
