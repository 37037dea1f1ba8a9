-- admission_keys.lua: the admission keys, first of the admission step
-- (admission_keys.lua, hold_lib.lua, adaptive.lua, admission.lua:
-- scripts.go puts the four, in this order, ahead of tick.lua, ingest.lua
-- and release.lua).
--
-- Those scripts take the admission keys first, in this order:
-- KEYS[1] config HASH, KEYS[2] waiting ZSET, KEYS[3] holders ZSET,
-- KEYS[4] stats HASH, KEYS[5] seen ZSET, KEYS[6] served ZSET,
-- KEYS[7] control HASH, KEYS[8] health HASH, KEYS[9] changes LIST,
-- KEYS[10] unrecorded ZSET (the key waitq:{<eventId>}:unlogged),
-- KEYS[11] holds HASH, KEYS[12] items HASH, KEYS[13] sold HASH (an expired
-- holder's holds end in the step that expires them: hold_lib.lua's end_holds),
-- KEYS[14] freeing ZSET (released slots whose release record is not yet in
-- the log: still counted against the capacity), KEYS[15] journal LIST (the
-- line's journal: journal_lib.lua), KEYS[16] called ZSET, KEYS[17]
-- callplaces HASH, KEYS[18] claims ZSET, KEYS[19] lapsed ZSET (away,
-- called, lapsed: admission.lua), KEYS[20] order ZSET, KEYS[21] overtaken
-- HASH, KEYS[22] admissions LIST (the fairness figures counted at each
-- admission: order_lib.lua)
local K = {
  config = KEYS[1], waiting = KEYS[2], holders = KEYS[3], stats = KEYS[4], seen = KEYS[5], served = KEYS[6],
  control = KEYS[7], health = KEYS[8], changes = KEYS[9], unrecorded = KEYS[10],
  holds = KEYS[11], items = KEYS[12], sold = KEYS[13], freeing = KEYS[14], journal = KEYS[15],
  called = KEYS[16], callplaces = KEYS[17], claims = KEYS[18], lapsed = KEYS[19],
  order = KEYS[20], overtaken = KEYS[21], admissions = KEYS[22],
}
