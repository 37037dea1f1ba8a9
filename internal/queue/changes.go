package queue

// Changes are what one step changed in one event on its own, to record
// (StepStore): its records, in the order to write them, and what to mark
// once the log holds them.
type Changes struct {
	EventID string
	Records []Message
	// Admitted are the users whose admit records Records holds; Fresh
	// those of them the step admitted itself (not found unrecorded).
	Admitted, Fresh []string
	// Freeing are the released slots (freeing members) whose release
	// records Records holds.
	Freeing []string
}

// Marks are one event's admissions and released slots whose records the
// log acknowledged (StepStore.MarkRecorded).
type Marks struct {
	EventID string
	Users   []string
	Freeing []string
}

// NoOffsets returns msgs as messages not read from the log (NoOffset).
func NoOffsets(msgs []Message) []LogMessage {
	out := make([]LogMessage, len(msgs))
	for i, m := range msgs {
		out[i] = LogMessage{Message: m, Offset: NoOffset}
	}
	return out
}
