// Package recording records in the log the changes the live state makes on
// its own: a change made (a step of queue.StepStore: admissions, expiries,
// releases, sweeps; holds, sales, configurations) → recorded in the log
// (queue.Recorder, kafkajoin's publisher) → marked recorded → told (the
// store's MarkRecorded, which publishes the admission notices). Store
// decorates the live state's store with these steps and implements the
// same ports (queue.IngestStore, queue.GatewayStore, queue.EventStore, …),
// so the consumer, the slot monitor, release and the admin API call it
// where they called the store.
//
// The orders it keeps (docs/data.md, "Records: the log as the source of
// truth"):
//   - an admission is written, then marked, then told: nobody is told of an
//     admission the log lacks; a write that fails leaves it unrecorded
//     until a monitor tick (TickStep) records it;
//   - a release is written, then its slot freed (marked), then handed on
//     (HandOn), whose admissions are recorded in turn: the successor's
//     admit record follows the release in the log;
//   - sweeps and expiries whose write failed are kept (up to maxPending,
//     the oldest discarded, counted in the warning) and written first with
//     the next records;
//   - a move (a resume link's use) is written after the change and before
//     the answer; a write that fails is kept as a sweep is, and the link
//     asked again answers the same move and writes it again (move.go);
//   - a hold, unhold and sale are written after their change and before
//     the answer; an unsold record is written before its change; a config
//     record after the configuration is stored, with its stamp.
//
// A Store is safe for concurrent use.
package recording
