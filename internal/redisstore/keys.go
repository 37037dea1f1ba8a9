package redisstore

import (
	"encoding/base64"
	"hash/fnv"
)

// EventsKey is the SET of registered event ids (docs/data.md#keys).
const EventsKey = "waitq:events"

// AdmissionsChannel is the pub/sub channel of all admissions (docs/data.md, "The admissions channel").
const AdmissionsChannel = "waitq:admitted"

// WaitingKey is eventID's waiting line, a ZSET (docs/data.md#keys).
func WaitingKey(eventID string) string { return "waitq:{" + eventID + "}:waiting" }

// HoldersKey is eventID's holders of a slot, a ZSET (docs/data.md#keys);
// named :active, its name before the word holders, so stored data stays.
func HoldersKey(eventID string) string { return "waitq:{" + eventID + "}:active" }

// ConfigKey is eventID's configuration, a HASH (docs/data.md#keys).
func ConfigKey(eventID string) string { return "waitq:{" + eventID + "}:config" }

// StatsKey is eventID's counters, a HASH (docs/data.md#keys).
func StatsKey(eventID string) string { return "waitq:{" + eventID + "}:stats" }

// SeenKey is eventID's waiting users' presence, a ZSET (docs/data.md#keys).
func SeenKey(eventID string) string { return "waitq:{" + eventID + "}:seen" }

// ServedKey is eventID's served marks, a ZSET (docs/data.md#keys).
func ServedKey(eventID string) string { return "waitq:{" + eventID + "}:served" }

// PrequeueKey is eventID's pre-queue, the draw's list, a ZSET (docs/data.md#keys).
func PrequeueKey(eventID string) string { return "waitq:{" + eventID + "}:prequeue" }

// ControlKey is eventID's adaptive controller, a HASH (docs/data.md#keys).
func ControlKey(eventID string) string { return "waitq:{" + eventID + "}:control" }

// HealthKey is eventID's health reports, a HASH (docs/data.md#keys).
func HealthKey(eventID string) string { return "waitq:{" + eventID + "}:health" }

// ChangesKey is eventID's latest effective-rate changes, a LIST (docs/data.md#keys).
func ChangesKey(eventID string) string { return "waitq:{" + eventID + "}:changes" }

// UnrecordedKey is eventID's unrecorded holders, a ZSET named ":unlogged" (docs/data.md#keys).
func UnrecordedKey(eventID string) string { return "waitq:{" + eventID + "}:unlogged" }

// FreeingKey is eventID's released slots not yet recorded, a ZSET (docs/data.md#keys).
func FreeingKey(eventID string) string { return "waitq:{" + eventID + "}:freeing" }

// CalledKey is eventID's called people, a ZSET (docs/data.md#keys).
func CalledKey(eventID string) string { return "waitq:{" + eventID + "}:called" }

// CallPlacesKey is the places eventID's called people left, a HASH (docs/data.md#keys).
func CallPlacesKey(eventID string) string { return "waitq:{" + eventID + "}:callplaces" }

// ClaimsKey is eventID's called people who came back, a ZSET (docs/data.md#keys).
func ClaimsKey(eventID string) string { return "waitq:{" + eventID + "}:claims" }

// LapsedKey is eventID's turns that lapsed, a ZSET (docs/data.md#keys).
func LapsedKey(eventID string) string { return "waitq:{" + eventID + "}:lapsed" }

// MovedKey is eventID's users whose place moved to another, a ZSET (docs/data.md#keys).
func MovedKey(eventID string) string { return "waitq:{" + eventID + "}:moved" }

// ResumesKey is eventID's spent resume links, a ZSET (docs/data.md#keys).
func ResumesKey(eventID string) string { return "waitq:{" + eventID + "}:resumes" }

// ArrivedKey is eventID's admissions that arrived at the shop, a ZSET (docs/data.md#keys).
func ArrivedKey(eventID string) string { return "waitq:{" + eventID + "}:arrived" }

// TombstoneKey is eventID's tombstone, a STRING (docs/data.md#deleting-an-event-the-tombstone).
func TombstoneKey(eventID string) string { return "waitq:{" + eventID + "}:deleted" }

// HoldsKey is eventID's item holds, a HASH (docs/data.md#keys).
func HoldsKey(eventID string) string { return "waitq:{" + eventID + "}:holds" }

// SoldKey is eventID's sold items, a HASH (docs/data.md#keys).
func SoldKey(eventID string) string { return "waitq:{" + eventID + "}:sold" }

// ItemsKey is eventID's buyers' items, a HASH (docs/data.md#keys).
func ItemsKey(eventID string) string { return "waitq:{" + eventID + "}:items" }

// OffsetsKey is eventID's applied offsets, a HASH (docs/data.md#keys).
func OffsetsKey(eventID string) string { return "waitq:{" + eventID + "}:offsets" }

// OrderKey is the places eventID's latest admissions were made from, a
// ZSET (docs/data.md#keys).
func OrderKey(eventID string) string { return "waitq:{" + eventID + "}:order" }

// OvertakenKey is, for eventID's latest admissions, how many people
// admitted before each had joined after them, a HASH (docs/data.md#keys).
func OvertakenKey(eventID string) string { return "waitq:{" + eventID + "}:overtaken" }

// AdmissionsKey is the users of eventID's latest admissions in order, a
// LIST (docs/data.md#keys).
func AdmissionsKey(eventID string) string { return "waitq:{" + eventID + "}:admissions" }

// ReleasedKey is eventID's released admissions, a ZSET (docs/data.md#keys).
func ReleasedKey(eventID string) string { return "waitq:{" + eventID + "}:released" }

// eventKeys are the keys of one event, named so that each script call lists
// its KEYS explicitly, in the order its header gives.
type eventKeys struct {
	config, waiting, holders, stats, seen, served, prequeue string
	control, health, changes, unrecorded, freeing           string
	holds, sold, items, offsets, released, joinKeys         string
	journal, gateways                                       string
	called, callplaces, claims, lapsed                      string
	moved, resumes                                          string
	arrived                                                 string
	order, overtaken, admissions                            string
}

// admission returns the admission keys, the admission step's: every script
// that admits (tick.lua, ingest.lua, release.lua) takes them first, in the
// order admission_keys.lua names them (the hold keys last: a holder expired
// loses their holds in the same step).
func (k eventKeys) admission() []string {
	return []string{k.config, k.waiting, k.holders, k.stats, k.seen, k.served, k.control, k.health, k.changes, k.unrecorded,
		k.holds, k.items, k.sold, k.freeing, k.journal, k.called, k.callplaces, k.claims, k.lapsed, k.order, k.overtaken, k.admissions}
}

// tick returns the keys of tick.lua: the admission keys, then released
// and arrived (a no-show's slot is freed as a release frees it).
func (k eventKeys) tick() []string {
	return append(k.admission(), k.released, k.arrived)
}

func keysOf(eventID string) eventKeys {
	return eventKeys{
		config:     ConfigKey(eventID),
		waiting:    WaitingKey(eventID),
		holders:    HoldersKey(eventID),
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
		joinKeys:   JoinKeysKey(eventID),
		journal:    JournalKey(eventID),
		gateways:   GatewaysKey(eventID),
		called:     CalledKey(eventID),
		callplaces: CallPlacesKey(eventID),
		claims:     ClaimsKey(eventID),
		lapsed:     LapsedKey(eventID),
		moved:      MovedKey(eventID),
		resumes:    ResumesKey(eventID),
		arrived:    ArrivedKey(eventID),
		order:      OrderKey(eventID),
		overtaken:  OvertakenKey(eventID),
		admissions: AdmissionsKey(eventID),
	}
}

// JournalKey is eventID's line journal, a LIST (docs/data.md#the-lines-journal).
func JournalKey(eventID string) string { return "waitq:{" + eventID + "}:journal" }

// GatewaysKey is the gateways reading eventID's line, a ZSET (docs/data.md#keys).
func GatewaysKey(eventID string) string { return "waitq:{" + eventID + "}:gateways" }

// JoinKeysKey is eventID's users' join keys (each as JoinKeyDigest), a
// HASH named :visits (docs/data.md#keys).
func JoinKeysKey(eventID string) string { return "waitq:{" + eventID + "}:visits" }

// JoinKeyDigest is what the line keeps of a join key: its 64-bit FNV-1a,
// base64url, 11 characters however long the key (up to 64), so that a
// waiting person's entry of :visits fits the allocator's 16-byte class.
// Only a user's own keys are ever compared, so a collision is the user's
// own (their late try is taken as a try of the admitted join).
func JoinKeyDigest(key string) string {
	if key == "" {
		return ""
	}
	h := fnv.New64a()
	_, _ = h.Write([]byte(key))
	return base64.RawURLEncoding.EncodeToString(h.Sum(nil))
}

// SpentKey is eventID's spent one-time proofs, a ZSET (docs/data.md#keys).
func SpentKey(eventID string) string { return "waitq:{" + eventID + "}:spent" }

// DoorKey is eventID's door counters, a HASH (docs/data.md#keys).
func DoorKey(eventID string) string { return "waitq:{" + eventID + "}:door" }

// SeriesKey is eventID's series, a ZSET (docs/data.md#keys).
func SeriesKey(eventID string) string { return "waitq:{" + eventID + "}:series" }

// AddressesKey is eventID's addresses to mail, a HASH (docs/data.md#keys).
func AddressesKey(eventID string) string { return "waitq:{" + eventID + "}:addresses" }

// AddressCountKey is how many users of eventID left each address, a HASH (docs/data.md#keys).
func AddressCountKey(eventID string) string { return "waitq:{" + eventID + "}:addresscount" }
