-- marks_lib.lua: the applied offsets' marks of an event's partitions (the
-- offsets HASH, docs/data.md), raised in the step that applies a batch.
-- Prepended to ingest.lua.

-- marks_raise raises each partition's mark in the offsets HASH at key to
-- its high, for the parts triples partition, low, high from ARGV[from]
-- (low: the offset of its first listed message, '' none), and returns the
-- listed messages applied already (skip[i] true: at or below its mark), or
-- nil when no partition's low is at or below its mark. Only then is where
-- read: for each listed message "<slot> <offset> " (slot 1..parts, 0: not
-- from the log).
local function marks_raise(key, from, parts, where)
  local skip, marks = nil, {}
  for slot = 1, parts do
    local t = from + 3 * (slot - 1)
    local part, low, high = ARGV[t], ARGV[t + 1], ARGV[t + 2]
    local mark = tonumber(redis.call('HGET', key, part) or '-1')
    marks[slot] = mark
    if low ~= '' and tonumber(low) <= mark then
      skip = {}
    end
    if tonumber(high) > mark then
      redis.call('HSET', key, part, high)
    end
  end
  if skip then
    local i = 0
    for slot, offset in string.gmatch(where, '(%d+) (%-?%d+) ') do
      i = i + 1
      slot = tonumber(slot)
      if slot > 0 and tonumber(offset) <= marks[slot] then
        skip[i] = true
      end
    end
  end
  return skip
end
