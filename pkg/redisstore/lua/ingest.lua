-- ingest.lua: apply a batch of joins and leaves of one event, in order,
-- then let people straight in while there is room (after admission.lua,
-- which it is run behind).
--
-- KEYS[1] config HASH, KEYS[2] waiting ZSET, KEYS[3] active ZSET,
-- KEYS[4] served ZSET, KEYS[5] stats HASH, KEYS[6] seen ZSET
-- ARGV[1] now (unix ms)
-- ARGV[2] fast-track batch: the most users admitted at once after the
-- batch (0: none; the slot monitor admits)
-- ARGV[3] event id, ARGV[4] the admissions channel ('' : publish nothing)
-- ARGV[5..] triples: op ("join" | "leave"), userId, stamp (unix ms)
--
-- A join adds the user with score = stamp unless they are already waiting
-- (their first place stands), hold an unexpired slot, or were admitted for
-- a join stamped at or after this one (served): a replayed join after a
-- consumer crash never queues or admits anyone again, while a new join
-- after a release (a newer stamp) queues again. A leave removes the user
-- from the waiting line.
--
-- The fast track: after the batch, admit() (admission.lua) runs with the
-- fast-track batch, so a join that finds room (free capacity, rate budget,
-- the event not paused) and nobody ahead is admitted in the same atomic
-- step that keeps the capacity: there is no second way into a slot.
--
-- Returns {joined, left, ignored, admitted} where ignored counts joins of
-- users who were already waiting, holding a slot or served, and leaves of
-- users not waiting, and admitted the users the fast track let in,
-- or -1 when the event has no configuration (unknown or deleted event):
-- then nothing is written.
if redis.call('EXISTS', KEYS[1]) == 0 then
  return -1
end
local now = tonumber(ARGV[1])
local joined, left, ignored = 0, 0, 0
for i = 5, #ARGV, 3 do
  local op, user = ARGV[i], ARGV[i + 1]
  if op == 'join' then
    local hold = redis.call('ZSCORE', KEYS[3], user)
    local served = redis.call('ZSCORE', KEYS[4], user)
    if hold and tonumber(hold) > now then
      ignored = ignored + 1
    elseif served and tonumber(ARGV[i + 2]) <= tonumber(served) then
      ignored = ignored + 1
    elseif redis.call('ZADD', KEYS[2], 'NX', ARGV[i + 2], user) == 1 then
      joined = joined + 1
    else
      ignored = ignored + 1
    end
  else
    if redis.call('ZREM', KEYS[2], user) == 1 then
      left = left + 1
    else
      ignored = ignored + 1
    end
  end
end
local admitted = {}
local batch = tonumber(ARGV[2])
if batch > 0 then
  local k = {config = KEYS[1], waiting = KEYS[2], active = KEYS[3], stats = KEYS[5], seen = KEYS[6], served = KEYS[4]}
  local _
  _, _, admitted = admit(k, ARGV[3], now, batch, ARGV[4])
end
return {joined, left, ignored, #admitted}
