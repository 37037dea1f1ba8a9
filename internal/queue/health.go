package queue

import (
	"math"
	"regexp"
)

// A health report is what a reporter tells waitq of the protected shop's
// state: waitq-guard measures it in front of the origin, a shop without a
// guard posts its own figures. The controller (Adaptive) sets the event's
// admission rate from the reports of every reporter of the event.

// HealthReport is one reporter's figures over its last window, the body of
// POST /v1/admin/events/{eventId}/health. Absent figures are nil: a report
// with no figure and no request says the reporter is alive and the shop
// idle.
type HealthReport struct {
	// Reporter names the reporter (one guard replica, one shop process):
	// each reporter's latest report counts, and the worst of them rules.
	// "" is DefaultReporter.
	Reporter string `json:"reporter,omitempty"`
	// WindowMs is the span the figures cover, ending now (0: an instant
	// reading). The controller decreases at most once per window, so that
	// it never answers twice to the same evidence.
	WindowMs int64 `json:"windowMs"`
	// Requests counts the requests the figures cover (nil: not counted).
	Requests *int64 `json:"requests,omitempty"`
	// P95Ms is the 95th percentile of the origin's response time, ms.
	P95Ms *float64 `json:"p95Ms,omitempty"`
	// ErrorRate is the share of requests that failed (5xx, timeouts,
	// refused connections), 0 to 1.
	ErrorRate *float64 `json:"errorRate,omitempty"`
	// Load is the shop's own measure of how busy it is, 1 at the most it
	// can bear (for example its TPS over its maximum TPS).
	Load *float64 `json:"load,omitempty"`
}

// DefaultReporter is the name of a report that gives none.
const DefaultReporter = "default"

// Limits on a health report.
const (
	MaxHealthWindowMs = 3_600_000
	MaxHealthLatency  = 3_600_000.0 // ms
	MaxHealthLoad     = 1000.0
)

var reporterRE = regexp.MustCompile(`^[A-Za-z0-9._:-]{1,64}$`)

// ValidReporter reports whether name can name a reporter: 1 to 64
// letters, digits or . _ : -.
func ValidReporter(name string) bool { return reporterRE.MatchString(name) }

// Validate reports the first invalid field of r as a CodeInvalidBody error.
func (r *HealthReport) Validate() error {
	finite := func(p *float64, lo, hi float64) bool {
		return p == nil || (!math.IsNaN(*p) && *p >= lo && *p <= hi)
	}
	switch {
	case r.Reporter != "" && !ValidReporter(r.Reporter):
		return Errorf(CodeInvalidBody, "reporter must be 1 to 64 letters, digits or . _ : -")
	case r.WindowMs < 0 || r.WindowMs > MaxHealthWindowMs:
		return Errorf(CodeInvalidBody, "windowMs must be between 0 and %d", MaxHealthWindowMs)
	case r.Requests != nil && *r.Requests < 0:
		return Errorf(CodeInvalidBody, "requests must not be negative")
	case !finite(r.P95Ms, 0, MaxHealthLatency):
		return Errorf(CodeInvalidBody, "p95Ms must be between 0 and %g", MaxHealthLatency)
	case !finite(r.ErrorRate, 0, 1):
		return Errorf(CodeInvalidBody, "errorRate must be between 0 and 1")
	case !finite(r.Load, 0, MaxHealthLoad):
		return Errorf(CodeInvalidBody, "load must be between 0 and %g (1: the most the shop can bear)", MaxHealthLoad)
	case r.Requests == nil && r.P95Ms == nil && r.ErrorRate == nil && r.Load == nil:
		return Errorf(CodeInvalidBody, "a report needs at least one of requests, p95Ms, errorRate, load")
	}
	return nil
}

// Name returns the reporter's name, DefaultReporter when it gave none.
func (r *HealthReport) Name() string {
	if r.Reporter == "" {
		return DefaultReporter
	}
	return r.Reporter
}
