-- release.lua: give a held slot back, and admit the next in line at once
-- (after the admission step, which it is run behind: admission_keys.lua,
-- hold_lib.lua, adaptive.lua, admission.lua).
--
-- KEYS[1..22] the admission keys (admission_keys.lua)
-- ARGV[1] userId, ARGV[2] now (unix ms)
-- ARGV[3] batch: the most users the freed room admits at once (0: none;
-- the slot monitor's next tick does)
-- ARGV[4] event id, ARGV[5] the admissions channel ('' : publish nothing)
-- ARGV[6] record ('1': the caller records the changes in the log)
-- ARGV[7] keep (ms): how long past its end a released admission stays
-- listed (queue.ReleasedKeep, the guards' tolerated skew)
-- KEYS[23] released ZSET
--
-- Removes the user from holders. A stay not yet recorded (in unrecorded) is not
-- the user's to give back: they were never told of it, and it stays. When
-- a slot was freed and batch > 0 it runs admit() (admission.lua), so the
-- next in line gets it within the same step.
--
-- With record '1' the slot is not free yet: it is added to freeing as
-- "<now>|<served mark>|<user>" scored by the end of the stay, and counted
-- against the capacity until the caller has written the release record
-- (mark_recorded.lua removes it, and the caller then runs the admission
-- step for the freed room) or the stay would have ended. Nobody is
-- admitted in this step. Had the slot been handed on at once, a lost
-- release record next to its successor's admit record would restore both
-- holders in a rebuild.
--
-- An unexpired slot released is added to released as "<holdEnd>|<user>"
-- scored by its end (the token's jti derives from it), in the same step;
-- the members whose stay ended more than keep ago (score <= now - keep) are
-- trimmed, so the set holds only tokens a guard may still accept.
--
-- The user's holds end with the slot, in the same step (hold_lib.lua's
-- end_holds): their items not sold are free again (the sold ones stay
-- among their items).
--
-- Returns {released, expiresAt, admitted, expired, ended, served, freeing}:
-- released 1 when the user held an unexpired slot, else 0 (releasing twice
-- frees one slot, and nobody frees a slot they did not hold); admitted and
-- expired as tick.lua returns them (empty unless the freed slot admitted
-- someone); ended the item holds that ended with the user's slot and with
-- the expired users'; served the released admission's served mark (0 when
-- none: what the release record names); freeing the member added to
-- freeing ('' when none).
-- REBUILDING while the event is being rebuilt (config.rebuilding): nothing
-- changed.
if redis.call('HEXISTS', K.config, 'rebuilding') == 1 then
  return REBUILDING
end
local stay = redis.call('ZSCORE', K.holders, ARGV[1])
if not stay or redis.call('ZSCORE', K.unrecorded, ARGV[1]) then
  return {0, 0, {}, {}, 0, 0, ''}
end
redis.call('ZREM', K.holders, ARGV[1])
local now = tonumber(ARGV[2])
local ended = end_holds(K.holds, K.items, K.sold, ARGV[1])
redis.call('ZREMRANGEBYSCORE', KEYS[23], '-inf', now - tonumber(ARGV[7]))
if tonumber(stay) <= now then
  return {0, 0, {}, {}, ended, 0, ''}
end
redis.call('ZADD', KEYS[23], stay, stay .. '|' .. ARGV[1])
local served = tonumber(redis.call('ZSCORE', K.served, ARGV[1]) or '0')
if ARGV[6] == '1' then
  local member = string.format('%d|%d|', now, served) .. ARGV[1]
  redis.call('ZADD', K.freeing, stay, member)
  return {1, 0, {}, {}, ended, served, member}
end
local batch = tonumber(ARGV[3])
if batch <= 0 then
  return {1, 0, {}, {}, ended, served, ''}
end
local expires, expired, admitted, more = admit(ARGV[4], now, batch, ARGV[5], ARGV[6])
return {1, expires or 0, admitted or {}, expired or {}, ended + (more or 0), served, ''}
