package queue

// Arrivals: an admitted person's first request at the shop with their entry
// token, reported by waitq-guard, the Go middleware (pkg/entry) or a
// forward-auth endpoint; an admission not arrived within the event's
// ArrivalSeconds is a no-show, its slot freed before the hold ends
// (docs/data.md, "Arrivals and no-shows").

// The bounds of Event.ArrivalSeconds (0: off).
const (
	MinArrivalSeconds = 10
	MaxArrivalSeconds = 3600
)

// Arrivals counts an event's admissions that arrived and those freed as
// no-shows, in an EventStatus (nil: the event has no arrival window).
type Arrivals struct {
	ArrivedTotal int64 `json:"arrivedTotal"`
	NoShowTotal  int64 `json:"noShowTotal"`
}

// checkArrival reports an arrival window that cannot work: out of bounds,
// or not shorter than the stay (the hold), when it would free nobody.
func (e *Event) checkArrival() error {
	a := e.ArrivalSeconds
	if a == 0 {
		return nil
	}
	if a < MinArrivalSeconds || a > MaxArrivalSeconds || a >= e.StaySeconds {
		return Errorf(CodeInvalidConfig, "arrivalSeconds must be between %d and %d and less than staySeconds, or 0 for off", MinArrivalSeconds, MaxArrivalSeconds)
	}
	return nil
}
