package redisstore

// EventsKey is the SET of registered event ids.
const EventsKey = "waitq:events"

// AdmissionsChannel is the pub/sub channel on which every admission is
// published as {"eventId","expiresAt","users":[…]} (admission.lua,
// mark_recorded.lua), so that
// the gateway holding an admitted user's socket tells them at once. One
// channel for all events: every gateway needs every event's admissions.
const AdmissionsChannel = "waitq:admitted"

// WaitingKey is the ZSET of users waiting in eventID's line, scored by their
// join stamp (unix ms).
func WaitingKey(eventID string) string { return "waitq:{" + eventID + "}:waiting" }

// ActiveKey is the ZSET of users holding a slot of eventID, scored by the
// expiry of their hold (unix ms).
func ActiveKey(eventID string) string { return "waitq:{" + eventID + "}:active" }

// ConfigKey is the HASH of eventID's configuration.
func ConfigKey(eventID string) string { return "waitq:{" + eventID + "}:config" }

// StatsKey is the HASH of eventID's counters (admittedTotal and what the ETA
// needs).
func StatsKey(eventID string) string { return "waitq:{" + eventID + "}:stats" }

// SeenKey is the ZSET of waiting users' last presence (unix ms), refreshed by
// the gateways while the user is connected; the disconnect grace runs from
// it.
func SeenKey(eventID string) string { return "waitq:{" + eventID + "}:seen" }

// ServedKey is the ZSET of users ever admitted to eventID, scored by the
// stamp (unix ms) of the join that was admitted: a join not newer than it is
// a replay (Kafka delivers at least once) and is ignored, so nobody is
// queued or admitted twice for one join.
func ServedKey(eventID string) string { return "waitq:{" + eventID + "}:served" }

// PrequeueKey is the ZSET of the users who joined eventID's pre-queue,
// scored by their drawn place (package draw's Score): the draw's list, kept
// after they leave or are admitted, exported after the opening.
func PrequeueKey(eventID string) string { return "waitq:{" + eventID + "}:prequeue" }

// ControlKey is the HASH of eventID's adaptive controller: its rate, its
// phase, when it last stepped and changed, and the signal it last used
// (adaptive.lua); also when the newest health report came (health.lua).
func ControlKey(eventID string) string { return "waitq:{" + eventID + "}:control" }

// HealthKey is the HASH of eventID's health reports: reporter name -> its
// latest report, JSON with the time it was received (health.lua).
func HealthKey(eventID string) string { return "waitq:{" + eventID + "}:health" }

// ChangesKey is the LIST of eventID's latest effective-rate changes, newest
// first, JSON (queue.RateChange), at most maxChanges.
func ChangesKey(eventID string) string { return "waitq:{" + eventID + "}:changes" }

// UnrecordedKey is the ZSET of eventID's unrecorded holders: their
// admission is not yet in the log, scored by when they were admitted (unix
// ms); they are told nothing until their admit record is acknowledged
// (admission.lua, mark_recorded.lua). The key's name, ":unlogged", is the
// contract's and predates the word.
func UnrecordedKey(eventID string) string { return "waitq:{" + eventID + "}:unlogged" }

// FreeingKey is the ZSET of eventID's released slots whose release record
// is not yet in the log: member "<released at>|<served mark>|<user>"
// (unix ms each), scored by the end of the released hold. A slot stays
// counted against the capacity until its release record is acknowledged
// (release.lua adds it, mark_recorded.lua removes it, admission.lua counts
// it and trims those whose hold ended, tick.lua hands the ones a writer
// left behind to a monitor to record): had the successor's admit record
// reached the log and the release record not, a rebuild would restore
// both holders.
func FreeingKey(eventID string) string { return "waitq:{" + eventID + "}:freeing" }

// TombstoneKey is the STRING left by the admin DELETE (delete_event.lua, in
// the step that removes the event's other keys) when it deletes eventID:
// the unix ms of the delete, standing while the event's log (its topic) is
// still to delete. It is removed once the topic's deletion succeeded; while
// it stands no event of that id is created (PutEvent) or rebuilt
// (BeginRebuild), so a new event never starts on the deleted one's log.
func TombstoneKey(eventID string) string { return "waitq:{" + eventID + "}:deleted" }

// HoldsKey is the HASH of eventID's item holds: item -> "<expiresAt>|<user>",
// the end of the holder's slot when the hold was taken (unix ms) and the
// holder ('|' is in no user id). A hold is live while its end is ahead and
// its holder still holds a slot (hold.lua): a slot that expired frees its
// holds at once without a write, and the step that drops its holder
// deletes them (admission.lua); a release deletes them in its step
// (release.lua).
func HoldsKey(eventID string) string { return "waitq:{" + eventID + "}:holds" }

// SoldKey is the HASH of eventID's sold items: item -> buyer (confirm.lua);
// never held again.
func SoldKey(eventID string) string { return "waitq:{" + eventID + "}:sold" }

// ItemsKey is the HASH of eventID's buyers' items: user -> the items they
// hold or bought, separated by spaces (no item id has one), counted against
// maxItemsPerUser; entries whose hold ended are removed when found
// (hold_lib.lua's user_items).
func ItemsKey(eventID string) string { return "waitq:{" + eventID + "}:items" }

// OffsetsKey is the HASH of eventID's applied offsets: partition (decimal)
// -> the highest offset of its log that ingest.lua applied (or a rebuild
// folded). A message at or below it is not applied again, so a redelivery
// or a stale consumer's late batch changes nothing.
func OffsetsKey(eventID string) string { return "waitq:{" + eventID + "}:offsets" }

// ReleasedKey is the ZSET of eventID's released admissions whose hold has
// not ended more than queue.ReleasedKeep ago: member "<holdEnd>|<user>" (the hold's end in unix ms, from which
// the token's jti derives: entry.AdmissionID), scored by the hold's end.
// release.lua adds to it in the release's step and trims the long ended ones, so
// it holds at most the event's capacity of admissions of the last hold; the
// gateway serves it (GET /v1/events/{eventId}/released) to the guards,
// which refuse those tokens offline.
func ReleasedKey(eventID string) string { return "waitq:{" + eventID + "}:released" }

// eventKeys are the keys of one event, named so that each script call lists
// its KEYS explicitly, in the order its header gives.
type eventKeys struct {
	config, waiting, active, stats, seen, served, prequeue string
	control, health, changes, unrecorded, freeing          string
	holds, sold, items, offsets, released, visits          string
	journal, gateways                                      string
}

// admission returns the admission keys, the admission step's: every script
// that admits (tick.lua, ingest.lua, release.lua) takes them first, in the
// order admission_keys.lua names them (the hold keys last: a holder dropped
// loses their holds in the same step).
func (k eventKeys) admission() []string {
	return []string{k.config, k.waiting, k.active, k.stats, k.seen, k.served, k.control, k.health, k.changes, k.unrecorded,
		k.holds, k.items, k.sold, k.freeing, k.journal}
}

func keysOf(eventID string) eventKeys {
	return eventKeys{
		config:     ConfigKey(eventID),
		waiting:    WaitingKey(eventID),
		active:     ActiveKey(eventID),
		stats:      StatsKey(eventID),
		seen:       SeenKey(eventID),
		served:     ServedKey(eventID),
		prequeue:   PrequeueKey(eventID),
		control:    ControlKey(eventID),
		health:     HealthKey(eventID),
		changes:    ChangesKey(eventID),
		unrecorded: UnrecordedKey(eventID),
		freeing:    FreeingKey(eventID),
		holds:      HoldsKey(eventID),
		sold:       SoldKey(eventID),
		items:      ItemsKey(eventID),
		offsets:    OffsetsKey(eventID),
		released:   ReleasedKey(eventID),
		visits:     VisitsKey(eventID),
		journal:    JournalKey(eventID),
		gateways:   GatewaysKey(eventID),
	}
}

// JournalKey is the LIST of eventID's line journal: one element per
// script call that changed the waiting line other than by a join behind
// everyone (lua/journal_lib.lua), the last 10,000 at most (JOURNAL_KEEP).
// Gateways read it to keep their users' places (gateway.Tracker).
func JournalKey(eventID string) string { return "waitq:{" + eventID + "}:journal" }

// GatewaysKey is the ZSET of the gateways reading eventID's line: gateway
// id -> the last time it read (unix ms, line.lua). The presence of the
// users a gateway holds lasts while it reads (sweep.lua).
func GatewaysKey(eventID string) string { return "waitq:{" + eventID + "}:gateways" }

// VisitsKey is the HASH of eventID's users' visits: user id -> the visit
// (Idempotency-Key) of the join that last put them in line (ingest.lua). A
// later join of the same visit queues nobody, though it was stamped after
// the user's admission: it is that admitted join's retry.
func VisitsKey(eventID string) string { return "waitq:{" + eventID + "}:visits" }

// SpentKey is the ZSET of eventID's spent one-time proofs (queue.Spend:
// "c:<challenge id>", "j:<jti>"), scored by when each would have expired
// (unix ms); spend.lua trims the expired ones.
func SpentKey(eventID string) string { return "waitq:{" + eventID + "}:spent" }

// DoorKey is the HASH of eventID's door counters: issued, solved and
// refused challenges, and the join-rate windows (w: the current ten-second
// window's number, n: joins in it, prev: joins in the one before).
func DoorKey(eventID string) string { return "waitq:{" + eventID + "}:door" }

// SeriesKey is the ZSET of eventID's series: one sample a period
// (queue.SeriesPeriodMs), JSON, scored by the period's start, the last
// queue.SeriesSpanMs only (series.lua).
func SeriesKey(eventID string) string { return "waitq:{" + eventID + "}:series" }
