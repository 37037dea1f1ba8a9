// Package redisstore is the only package that speaks Redis. It owns the key
// layout of the external contract (keys.go), the Lua scripts that change the
// live state atomically (lua/*.lua, embedded), and the Store that the
// services use through the interfaces of package queue (ports.go). Every
// way into a slot runs the one admission step (lua/admission_keys.lua,
// lua/hold_lib.lua, lua/adaptive.lua, lua/order_lib.lua, lua/admission.lua)
// behind its own script, which also ends the item holds of the holders it
// expires and counts the fairness report's figures (fairness.go reads
// them): the slot monitor's tick (tick.go), the fast track of ingest
// (ingest.go) and a release handing its slot on (release.go). The scripts' return codes are
// named once, in codes.go, for Go and Lua alike, and each script's reply
// is read by one decoder named for it beside its caller (decodeTickReply;
// admit.go the admission step's part, journal.go the line's journal's
// elements): the services get typed values, never a reply. The Store
// records nothing: its steps (queue.StepStore: IngestStep, TickStep,
// ReleaseStep, HandOn, …) return the changes its scripts made on their own
// (changes.go), leaving admissions unrecorded, and package recording writes
// them to the log, then marks them (MarkRecorded, which tells the users). It
// also writes a rebuilt state (BeginRebuild, WriteRebuilt, EndRebuild).
//
// Every per-event key carries the event id as a hash tag, so each script
// touches one Redis Cluster slot; scripts never build keys themselves and
// never read the clock (the caller passes "now"). A Store is safe for
// concurrent use.
package redisstore
