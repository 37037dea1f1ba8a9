package queue

import (
	"context"
	"time"

	"github.com/waitq/waitq/pkg/draw"
)

// The ports: everything the services need from the live state (Redis,
// package redisstore) and from the log (Kafka, package kafkajoin), with the
// requests and replies that cross them. Each service names the small
// interface it uses; the implementations check them at compile time
// (var _ queue.GatewayStore = (*redisstore.Store)(nil)). Nothing here
// speaks Redis or Kafka.
//
//	port           used by                          implemented by
//	EventLookup    EventCache                       redisstore.Store
//	EventStore     producer (admin API, metrics)    redisstore.Store
//	DrawChains     producer (in EventStore), reports redisstore.Store, recording.Store (its steps recorded)
//	DoorStore      producer (door.go: the door)     redisstore.Store
//	ReportStore    producer (fairness.go)           redisstore.Store, recording.Store
//	GatewayStore   gateway                          redisstore.Store
//	HoldStore      gateway (in GatewayStore)        redisstore.Store
//	IngestStore    kafkajoin.Consumer               redisstore.Store
//	RebuildStore   rebuild.Rebuilder                redisstore.Store
//	StepStore      recording.Store                  redisstore.Store
//	Publisher      producer, gateway (leaves)       kafkajoin.Publisher
//	Recorder       recording.Store                  kafkajoin.Publisher
//	Topics         producer (admin API)             kafkajoin.Admin
//	LogReader      rebuild.Rebuilder                kafkajoin.Admin

// ---- The live state (Redis)

// EventLookup finds an event's configuration.
type EventLookup interface {
	// Event returns the configuration of id, or ErrEventNotFound.
	Event(ctx context.Context, id string) (Event, error)
}

// DrawChains is what a chain draw needs of the store: the freeze and the
// draw, each made once, and its public data and receipts. The fairness
// report reads a drop's chain through PublicChain.
type DrawChains interface {
	// FreezeDraw freezes e's entries when nowMs is past its freeze time
	// and they are not yet, and makes the draw without a public value
	// past its deadline; it returns e's chain state after.
	FreezeDraw(ctx context.Context, e Event, nowMs int64) (DrawChainState, error)
	// SupplyPublicValue makes e's draw with value (decoded), once.
	SupplyPublicValue(ctx context.Context, e Event, value []byte, nowMs int64) (DrawChainState, error)
	// PublicChain returns e's chain draw as published (draw.Chain) once
	// drawn, with the tree its receipts are cut from.
	PublicChain(ctx context.Context, e Event) (*draw.Chain, *draw.Tree, error)
}

// EventStore keeps event configurations and reports their live state:
// what producer-api's admin API and metrics need.
type EventStore interface {
	// PutEvent creates or replaces e's configuration and reports whether it
	// was created. It creates no event over a tombstone (ErrLogNotDeleted).
	PutEvent(ctx context.Context, e Event) (created bool, err error)
	EventLookup
	// EventStatus returns id's configuration and live sizes, or ErrEventNotFound.
	EventStatus(ctx context.Context, id string, nowMs int64) (EventStatus, error)
	// EventIDs lists the registered events.
	EventIDs(ctx context.Context) ([]string, error)
	// DrawOrder returns id's pre-queue users in the order the line holds
	// them (empty for an event without a draw).
	DrawOrder(ctx context.Context, id string) ([]string, error)
	DrawChains
	// ReportHealth keeps r as its reporter's latest health report of id,
	// received at nowMs (ErrEventNotFound for an unknown id).
	ReportHealth(ctx context.Context, id string, r HealthReport, nowMs int64) error
	// Tick runs the slot monitor's tick over req's events
	// (GatewayStore.Tick): the admin API runs it for one event, without the
	// sweep, after a change that may make room.
	Tick(ctx context.Context, req TickRequest) ([]TickResult, error)
	// DeleteEvent removes id and its line and, in the same atomic step,
	// leaves id's tombstone: its log (topic) is to delete. It fails with
	// CodeSlotsInUse while anyone holds a slot, and with ErrEventNotFound
	// for an id neither configured nor tombstoned; an id already deleted
	// whose tombstone stands is no error (its log is still to delete).
	DeleteEvent(ctx context.Context, id string, nowMs int64) error
	// Tombstoned reports whether id was deleted while its log is not yet.
	Tombstoned(ctx context.Context, id string) (bool, error)
	// ClearTombstone removes id's tombstone, once its log is deleted.
	ClearTombstone(ctx context.Context, id string) error
	// Series returns id's samples of the last SeriesSpanMs, oldest first.
	Series(ctx context.Context, id string, nowMs int64) ([]SeriesSample, error)
	// Ping reports whether the store is reachable.
	Ping(ctx context.Context) error
}

// EventStatus is an event's configuration with the live sizes of its line
// (EventStore.EventStatus).
type EventStatus struct {
	Event
	Phase         Phase       `json:"phase"`
	Waiting       int64       `json:"waiting"`
	Holders       int64       `json:"holders"` // also answered as active, its older name (MarshalJSON)
	AdmittedTotal int64       `json:"admittedTotal"`
	Draw          *DrawStatus `json:"draw,omitempty"`
	Fairness      Fairness    `json:"fairness"`
	// Control is the adaptive controller's state (nil: a fixed rate).
	Control *ControlStatus `json:"control,omitempty"`
	// Health is every reporter's latest report, adaptive or not.
	Health []ReporterHealth `json:"health,omitempty"`
	// Door is who came through the door: challenges issued, solved and
	// refused, the join rate, the difficulty in force.
	Door DoorStats `json:"door"`
	// Turns are the turns of people away (nil: the event keeps no places
	// while away, Event.Away).
	Turns *Turns `json:"turns,omitempty"`
	// Arrivals counts arrivals and no-shows (nil: no arrival window).
	Arrivals *Arrivals `json:"arrivals,omitempty"`
}

// Fairness is what tells an operator whether the line kept its order.
type Fairness struct {
	// Inversions counts joins that reached the line after a user placed
	// behind them had already been admitted, and then had to wait:
	// consumer lag let them be overtaken. 0 in normal operation.
	Inversions int64 `json:"inversions"`
	// InversionPairs counts the inverted pairs of admissions: the fairness
	// report's order.inversions (OrderReport).
	InversionPairs int64 `json:"inversionPairs"`
	// IngestDelayMs is how long joins took from their stamp to the line.
	IngestDelayMs DelaySummary `json:"ingestDelayMs"`
}

// ReportStore reads the fairness report (producer's public report routes).
type ReportStore interface {
	// FairnessReport returns id's report at nowMs, or ErrEventNotFound.
	FairnessReport(ctx context.Context, id string, nowMs int64) (FairnessReport, error)
	// AdmittedOrder returns userID's own line of id's report, or
	// ErrNotAdmitted when they are not among its admissions kept.
	AdmittedOrder(ctx context.Context, id, userID string) (AdmittedOrder, error)
}

// GatewayStore is what ws-gateway needs of the live state: where users
// stand, the slot monitor's tick, releases and the admission notices.
type GatewayStore interface {
	EventLookup
	LineStore // the places of the users a gateway holds (line.go)
	// HoldStore keeps the seat holds (hold.go).
	HoldStore
	// EventIDs lists the registered events.
	EventIDs(ctx context.Context) ([]string, error)
	// Status reads where users stand in eventID, in order, and marks the
	// waiting ones as present at nowMs.
	Status(ctx context.Context, eventID string, users []string, nowMs int64) (StatusBatch, error)
	// Tick does one slot-monitor tick over req's events: the sweep, then
	// the admission step; its users are told once their admissions are
	// recorded.
	Tick(ctx context.Context, req TickRequest) ([]TickResult, error)
	// Release gives userID's slot back and reports whether they held an
	// unexpired one, and how many item holds ended unconfirmed with it and
	// with the slots of holders its admission step expired (ErrRebuilding
	// while the event is rebuilt).
	Release(ctx context.Context, eventID, userID string, nowMs int64) (released bool, holdsExpired int, err error)
	// Released lists eventID's released admissions whose hold ends after
	// nowMs less ReleasedKeep: the tokens the guards refuse though they
	// verify.
	Released(ctx context.Context, eventID string, nowMs int64) ([]ReleasedAdmission, error)
	// Arrive marks userID's admission ending at holdUntil arrived, if it
	// is their current one (arrival.go): arrived, and first when not
	// marked before (ErrRebuilding while the event is rebuilt).
	Arrive(ctx context.Context, eventID, userID string, holdUntil, nowMs int64) (arrived, first bool, err error)
	// SubscribeAdmissions calls f with the notice of every admission made
	// anywhere (slot monitor, fast track, release) until ctx ends.
	SubscribeAdmissions(ctx context.Context, f func(AdmissionNotice)) error
	// SampleSeries samples each of eventIDs whose series has no sample of
	// nowMs's period yet (series.go): one writer per period.
	SampleSeries(ctx context.Context, eventIDs []string, nowMs int64) error
	// Ping reports whether the store is reachable.
	Ping(ctx context.Context) error
}

// ReleasedKeep is how long past its stay's end a released admission stays
// listed (Store.Released): a guard accepts a token until its end plus the
// difference of clocks it tolerates (pkg/entry's DefaultSkew), so it must
// be able to refuse a released one as long. Shorter, a released token
// passed the guard again in that window (found by the fault campaign).
const ReleasedKeep = 2 * time.Second

// ReleasedAdmission is an admission whose slot was released before its
// stay ended; its token's jti is entry.AdmissionID(event, UserID, StayUntil).
type ReleasedAdmission struct {
	UserID    string
	StayUntil int64 // end of the released stay (unix ms)
}

// AdmissionNotice is the news of one admission step, published on the
// admissions channel to every gateway: the users let in, in line order,
// and the end of their stay.
type AdmissionNotice struct {
	EventID   string   `json:"eventId"`
	ExpiresAt int64    `json:"expiresAt"` // unix ms
	Users     []string `json:"users"`
}

// IngestStore is what the ingest consumer needs of the live state: it
// applies decoded messages, each with its place in the log. An error means
// nothing may be assumed written; the batch is then offered again, so
// applying a batch twice must be harmless. A message at or below the
// highest offset already applied on its partition changes nothing (a
// redelivery, or the late batch of a member whose partition moved).
type IngestStore interface {
	IngestLog(ctx context.Context, msgs []LogMessage, nowMs int64) (IngestResult, error)
}

// LogMessage is a message with its place in its event's log: the partition and
// offset it was read at. Offset NoOffset: no place (applied whatever was
// applied before, marking nothing).
type LogMessage struct {
	Message
	Partition int
	Offset    int64
}

// NoOffset is the Offset of a message not read from the log.
const NoOffset = -1

// IngestResult counts what applying a batch of messages to the live state did.
type IngestResult struct {
	Joined  int
	Left    int
	Ignored int
	// Admitted counts the users the fast track let in after the batch.
	Admitted int
	// Inversions counts joins that had to wait behind a user placed after
	// them who was already admitted (queue.Fairness).
	Inversions int
	// HoldsExpired counts the item holds that ended unconfirmed with the
	// slots of holders the fast track's admission step expired.
	HoldsExpired int
	// UnknownEvents lists the events with no configuration: none of their
	// messages was written.
	UnknownEvents []string
	// Rebuilding lists the events being rebuilt from their log: none of
	// their messages was written; they are to be offered again once the
	// rebuild ends.
	Rebuilding []string
}

// RebuildStore is what a rebuild writes: the mark that stops an event's
// admission, sweeps, releases and ingest, the state folded from the log
// (Rebuilt, what a Replay gives), and the mark's removal.
type RebuildStore interface {
	BeginRebuild(ctx context.Context, eventID string, nowMs int64) error
	WriteRebuilt(ctx context.Context, st Rebuilt, nowMs int64) error
	EndRebuild(ctx context.Context, eventID string) error
}

// StepStore is what package recording needs of the live state: the steps
// that change it on their own, each returning the changes to record
// (changes.go), and the marks that follow the records. Admissions stay
// unrecorded (told to nobody) and released slots counted until marked.
type StepStore interface {
	// IngestStep is IngestStore.IngestLog, with the fast track's changes.
	IngestStep(ctx context.Context, msgs []LogMessage, nowMs int64) (IngestResult, []Changes, error)
	// TickStep is GatewayStore.Tick with its changes, late ones included.
	TickStep(ctx context.Context, req TickRequest) ([]TickResult, []Changes, error)
	// ReleaseStep is GatewayStore.Release, its slot counted until marked.
	ReleaseStep(ctx context.Context, eventID, userID string, nowMs int64) (released bool, holdsExpired int, c Changes, err error)
	// HandOn admits into the room a recorded release freed (fast track).
	HandOn(ctx context.Context, eventID string, nowMs int64) (holdsExpired int, c Changes, err error)
	// MarkRecorded marks admissions recorded and tells their users, and
	// frees the released slots named, one atomic step per event; an event
	// being rebuilt changes nothing and is returned in rebuilding.
	MarkRecorded(ctx context.Context, marks []Marks) (rebuilding []string, err error)
	// PutEventStep is EventStore.PutEvent with the stamp it stored.
	PutEventStep(ctx context.Context, e Event) (created bool, stamp int64, err error)
	// UnholdStep is HoldStore.Unhold, reporting also a dead hold removed.
	UnholdStep(ctx context.Context, eventID, userID, item string, nowMs int64) (removed, live bool, err error)
	// UnsellStep is HoldStore.Unsell running before on the sale first: its
	// error ends the call with nothing changed.
	UnsellStep(ctx context.Context, eventID, item string, nowMs int64, before func(Sale) error) (Sale, bool, error)
	// FreezeDrawStep is DrawChains.FreezeDraw with the records of the
	// chain draw's steps made and not yet marked (DrawChainState.Records);
	// SupplyPublicValueStep is DrawChains.SupplyPublicValue so too.
	FreezeDrawStep(ctx context.Context, e Event, nowMs int64) (DrawChainState, Changes, error)
	SupplyPublicValueStep(ctx context.Context, e Event, value []byte, nowMs int64) (DrawChainState, Changes, error)
	// MarkDrawRecorded tells the steps whose records c holds: the root
	// published and the seed revealed, the draw published and admitted.
	MarkDrawRecorded(ctx context.Context, c Changes) error
	// EventStatusStep and FairnessReportStep are EventStore.EventStatus
	// and ReportStore.FairnessReport without a chain draw's steps.
	EventStatusStep(ctx context.Context, id string, nowMs int64) (EventStatus, error)
	FairnessReportStep(ctx context.Context, id string, nowMs int64) (FairnessReport, error)
}

// ---- The log (Kafka)

// DefaultPublishTimeout is how long a publish waits for the broker's
// acknowledgement before it fails: a join is then answered 503
// broker_unavailable.
const DefaultPublishTimeout = 3 * time.Second

// Publisher publishes messages to the event's topic and returns only after the
// broker acknowledged them from all in-sync replicas.
type Publisher interface {
	Publish(ctx context.Context, m Message) error
	// Ping reports whether the broker is reachable.
	Ping(ctx context.Context) error
}

// Recorder records changes the live state made on its own (admissions,
// releases, expiries, sweeps) and configurations: it writes them to their
// events' logs and returns once the broker acknowledged all of them from
// every in-sync replica.
type Recorder interface {
	Record(ctx context.Context, msgs []Message) error
}

// Topics manages the per-event Kafka topics.
type Topics interface {
	// EnsureTopic creates the event's topic with the given partitions, or
	// does nothing if it exists.
	EnsureTopic(ctx context.Context, eventID string, partitions int) error
	// DeleteTopic removes the event's topic; a missing topic is no error.
	DeleteTopic(ctx context.Context, eventID string) error
}

// LogReader reads an event's whole log (its topic), for a rebuild.
type LogReader interface {
	// ReadLog calls f with every valid message of eventID's topic as it
	// stood when the read began, and its offset, each partition's in log
	// order (partitions
	// may be read at once: f must be safe for concurrent use), and counts
	// what it read.
	ReadLog(ctx context.Context, eventID string, f func(partition int, offset int64, m Message)) (LogStats, error)
}

// LogStats counts what a read of an event's whole log found
// (LogReader.ReadLog).
type LogStats struct {
	Partitions int
	// Messages counts the messages read; Invalid those that did not decode
	// or belong to another event (skipped, as the consumer dead-letters
	// them).
	Messages, Invalid int64
	// Ends maps each partition to its end as read: the offset after the
	// last message read (0: an empty partition).
	Ends map[int]int64
}

// ---- The door (producer-api's door.go)
