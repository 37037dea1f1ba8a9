-- line.lua: what a gateway reads of an event once per slice of its
-- status round to keep the places of the users it follows
-- (gateway.Tracker): the event's head, the line's journal since the point
-- it read last, and the ends of the stays running.
--
-- KEYS[1] journal LIST, KEYS[2] waiting ZSET, KEYS[3] holders ZSET,
-- KEYS[4] stats HASH, KEYS[5] config HASH, KEYS[6] control HASH,
-- KEYS[7] gateways ZSET, KEYS[8] called ZSET
-- ARGV[1] now (unix ms), ARGV[2] the gateway, ARGV[3] the epoch and
-- ARGV[4] the seq it read up to ('' and 0: none)
--
-- Marks the gateway alive at now (KEYS[7]): the presence of the users it
-- holds lasts while it reads (sweep.lua).
--
-- Returns {head, epoch, seq, reset, elements, ends}: head is line_head's;
-- epoch and seq where the journal stands now; reset 1 when the caller's
-- point is of another epoch or no longer in the journal (trimmed, or ahead
-- of it): it learns its users' places again (status.lua), and elements is
-- empty; else elements are the journal's elements after its point, in
-- order (journal_lib.lua); ends are the ends (unix ms) of the holds
-- running after now, in order.
local now = tonumber(ARGV[1])
local head, ended, holders = line_head(now, KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6], KEYS[8])
local epoch, seq = journal_head(KEYS[1])
redis.call('ZADD', KEYS[7], now, ARGV[2])
local known, from = ARGV[3], tonumber(ARGV[4])
local reset, elements = 0, {}
if known ~= epoch or from > seq then
  reset = 1
elseif from < seq then
  local first = tonumber(string.match(redis.call('LINDEX', KEYS[1], 0), '^%S+ (%d+)'))
  if from + 1 < first then
    reset = 1
  else
    elements = redis.call('LRANGE', KEYS[1], from + 1 - first, LAST)
  end
end
local ends = {}
if holders > 0 then
  local r = redis.call('ZRANGE', KEYS[3], ended, ended + holders - 1, 'WITHSCORES')
  for i = 2, #r, 2 do
    ends[#ends + 1] = tonumber(r[i])
  end
end
return {head, epoch, seq, reset, elements, ends}
