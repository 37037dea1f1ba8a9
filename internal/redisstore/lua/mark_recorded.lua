-- mark_recorded.lua: admissions are recorded (in the log) now; tell their
-- users.
--
-- KEYS[1] unrecorded ZSET, KEYS[2] holders ZSET, KEYS[3] config HASH,
-- KEYS[4] freeing ZSET
-- ARGV[1] event id, ARGV[2] the admissions channel ('' : publish nothing),
-- ARGV[3] n, ARGV[4..3+n] user ids whose admit records the broker
-- acknowledged, ARGV[4+n..] members of freeing whose release records it
-- acknowledged
--
-- Takes each user out of unrecorded (admission.lua): from now on status.lua
-- shows their stay, so an entry token may be given. Users still holding
-- are published on the channel as admit() does when the caller does not
-- record, {"eventId","expiresAt","users":[…]}, one notice per end of stay.
-- The freeing members are removed: their slots are free from now on (the
-- caller runs the admission step for them).
-- Returns the number of users marked, or REBUILDING while the event is
-- being rebuilt (config.rebuilding): nobody is marked, nobody told, no
-- slot freed (the rebuild keeps a stay released live out of holders while
-- its member stays in freeing: keepFreeing, rebuild.go). The
-- rebuild read the log to an end taken after its mark, so a record
-- acknowledged now may lie past it; the users stay unrecorded, the rebuild
-- keeps them holding, and a monitor tick records them again after it.
if redis.call('HEXISTS', KEYS[3], 'rebuilding') == 1 then
  return REBUILDING
end
local last = 3 + tonumber(ARGV[3])
for i = last + 1, #ARGV do
  redis.call('ZREM', KEYS[4], ARGV[i])
end
local byEnd, ends, n = {}, {}, 0
for i = 4, last do
  local user = ARGV[i]
  if redis.call('ZREM', KEYS[1], user) == 1 then
    n = n + 1
    local stay = redis.call('ZSCORE', KEYS[2], user)
    if stay then
      if not byEnd[stay] then
        byEnd[stay] = {}
        ends[#ends + 1] = stay
      end
      table.insert(byEnd[stay], user)
    end
  end
end
if ARGV[2] ~= '' then
  for _, stay in ipairs(ends) do
    redis.call('PUBLISH', ARGV[2], cjson.encode({eventId = ARGV[1], expiresAt = tonumber(stay), users = byEnd[stay]}))
  end
end
return n
