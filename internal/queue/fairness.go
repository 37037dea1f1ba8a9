package queue

import "github.com/waitq/waitq/pkg/draw"

// FairnessReport is an event's fairness report as anyone may read it
// (GET /v1/events/{id}/fairness; docs/api.md, "Fairness report"): how far
// admission order strayed from join order, how long joins took to reach
// the line and people waited in it, the turns lost, and for a drop its
// draw.
type FairnessReport struct {
	EventID string `json:"eventId"`
	// Kind is "first-come", or "drop" for an event with a draw.
	Kind          string `json:"kind"`
	AdmittedTotal int64  `json:"admittedTotal"`
	// Order compares the order of admissions with the order of places.
	Order         OrderReport  `json:"order"`
	IngestDelayMs DelaySummary `json:"ingestDelayMs"`
	// TimeInLineMs is the time from a join's stamp to its admission.
	TimeInLineMs WaitSummary `json:"timeInLineMs"`
	LapsedTotal  int64       `json:"lapsedTotal"`
	ArrivedTotal int64       `json:"arrivedTotal"`
	NoShowTotal  int64       `json:"noShowTotal"`
	// Draw is the drop's draw (nil: a first-come line).
	Draw *DrawReport `json:"draw"`
	// ServerTime (unix ms) is when the report was read.
	ServerTime int64 `json:"serverTime"`
}

// OrderReport is how far admission order strayed from place order
// (order_lib.lua counts it at each admission).
type OrderReport struct {
	// Admissions is n, the admissions counted.
	Admissions int64 `json:"admissions"`
	// Inversions counts the inverted pairs: A placed before B (an earlier
	// stamp, or drawn before), B admitted before A.
	Inversions int64 `json:"inversions"`
	// KendallTau is Inversions / (n·(n−1)/2), 0 for fewer than 2.
	KendallTau float64 `json:"kendallTau"`
	// Exact is false once an admission was placed below a place no longer
	// kept (its count, and so Inversions, is then a lower bound).
	Exact bool `json:"exact"`
	// OvertakenJoins counts joins that reached the line behind someone
	// already admitted and then waited (Fairness.Inversions).
	OvertakenJoins int64 `json:"overtakenJoins"`
}

// NewOrderReport returns the report of n admissions with pairs inverted,
// beyond of them placed below the places kept, and overtaken joins.
func NewOrderReport(n, pairs, beyond, overtaken int64) OrderReport {
	r := OrderReport{Admissions: n, Inversions: pairs, Exact: beyond == 0, OvertakenJoins: overtaken}
	if n >= 2 {
		r.KendallTau = float64(pairs) / (float64(n) * float64(n-1) / 2)
	}
	return r
}

// DrawReport is a drop's draw as the report tells it: what exists today
// (the commitment, the seed from the opening on, the pre-queue's size,
// whether the seed matches the commitment). The draw's entry root and
// public random value are to join it here.
type DrawReport struct {
	DrawStatus
	// Verified is true once the seed is revealed and its SHA-256 is the
	// commitment.
	Verified bool `json:"verified"`
}

// NewDrawReport returns d's report (nil for nil).
func NewDrawReport(d *DrawStatus) *DrawReport {
	if d == nil {
		return nil
	}
	r := &DrawReport{DrawStatus: *d}
	if seed, err := draw.ParseSeed(d.Seed); err == nil {
		r.Verified = seed.Commitment() == d.Commitment
	}
	return r
}

// AdmittedOrder is one admitted person's own line of the report
// (GET /v1/events/{id}/fairness/mine).
type AdmittedOrder struct {
	EventID string `json:"eventId"`
	UserID  string `json:"userId"`
	// JoinedAt is the stamp of the join they were admitted from (unix ms;
	// 0 for a drawn pre-queue place, which has none).
	JoinedAt int64 `json:"joinedAt"`
	// DrawnPlace is true for a place the draw gave.
	DrawnPlace bool `json:"drawnPlace"`
	// OvertakenBy counts the people admitted before them who joined after.
	OvertakenBy int64 `json:"overtakenBy"`
}
