package queue

import (
	"math"
	"regexp"
)

// Adaptive admission: instead of a fixed admitPerMinute, an event's
// admission rate follows the protected shop's health (HealthReport), inside
// the bounds the operator sets. The controller is the AIMD rule TCP uses:
// while the shop is healthy and the rate is in use, the rate grows (doubling
// from the start rate until the first sign of trouble, then by
// IncreasePerStep); when the shop's p95 latency, error share or load is over
// its limit, the rate is multiplied by DecreaseFactor. It runs in
// adaptive.lua (package redisstore), inside the admission step,
// atomically with the admissions, so any number of gateways share one
// rate.

// Adaptive is an event's adaptive admission; the event's AdmitPerMinute is
// its ceiling.
type Adaptive struct {
	// TargetLatencyMs is the origin's p95 latency (ms) above which the rate
	// is decreased (required).
	TargetLatencyMs int `json:"targetLatencyMs"`
	// MaxErrorRate is the share of failed requests (0 to 1) above which the
	// rate is decreased.
	MaxErrorRate float64 `json:"maxErrorRate"`
	// MaxLoad is the reported load (1: the most the shop can bear) above
	// which the rate is decreased.
	MaxLoad float64 `json:"maxLoad"`
	// MinAdmitPerMinute is the floor: the rate never goes below it while
	// the signal is there (0: a struggling shop gets nobody new).
	MinAdmitPerMinute int `json:"minAdmitPerMinute"`
	// StartAdmitPerMinute is the rate before the first step.
	StartAdmitPerMinute int `json:"startAdmitPerMinute"`
	// IncreasePerStep is the additive increase (users a minute) of one step
	// once the first decrease ended the doubling.
	IncreasePerStep int `json:"increasePerStep"`
	// DecreaseFactor multiplies the rate when the shop is over a limit.
	DecreaseFactor float64 `json:"decreaseFactor"`
	// StepMs is the shortest time between two steps; a step also needs a
	// report newer than the last step's.
	StepMs int `json:"stepMs"`
	// MaxSettleSeconds bounds how long an increase waits for the users of
	// the last change to weigh on the shop: the average time a slot is held
	// at the current rate (holders / rate, Little's law), at most the stay
	// and at most this.
	MaxSettleSeconds int `json:"maxSettleSeconds"`
	// SignalTimeoutSeconds is how old the newest report may be before the
	// signal counts as lost.
	SignalTimeoutSeconds int `json:"signalTimeoutSeconds"`
	// OnSignalLoss is what a lost signal does: SignalLossStop (admit
	// nobody, as when the shop is down) or SignalLossKeep (keep the last
	// rate).
	OnSignalLoss string `json:"onSignalLoss"`
}

// What a lost signal does (Adaptive.OnSignalLoss).
const (
	SignalLossStop = "stop"
	SignalLossKeep = "keep"
)

// Defaults and limits of Adaptive.
const (
	DefaultMaxErrorRate         = 0.05
	DefaultMaxLoad              = 0.9
	DefaultDecreaseFactor       = 0.7
	DefaultStepMs               = 5000
	DefaultSignalTimeoutSeconds = 30
	DefaultMaxSettleSeconds     = 60
	MaxTargetLatencyMs          = 600_000
	MinStepMs                   = 100
	MaxStepMs                   = 600_000
	MaxSignalTimeoutSeconds     = 3600
)

// WithDefaults returns a with every unset setting at its default for an
// event admitting at most ceiling users a minute: the start rate a tenth of
// the ceiling, the additive increase a fiftieth.
func (a Adaptive) WithDefaults(ceiling int) Adaptive {
	if a.MaxErrorRate == 0 {
		a.MaxErrorRate = DefaultMaxErrorRate
	}
	if a.MaxLoad == 0 {
		a.MaxLoad = DefaultMaxLoad
	}
	if a.StartAdmitPerMinute == 0 {
		a.StartAdmitPerMinute = max(a.MinAdmitPerMinute, int(math.Ceil(float64(ceiling)/10)))
	}
	if a.IncreasePerStep == 0 {
		a.IncreasePerStep = max(1, int(math.Ceil(float64(ceiling)/50)))
	}
	if a.DecreaseFactor == 0 {
		a.DecreaseFactor = DefaultDecreaseFactor
	}
	if a.StepMs == 0 {
		a.StepMs = DefaultStepMs
	}
	if a.MaxSettleSeconds == 0 {
		a.MaxSettleSeconds = DefaultMaxSettleSeconds
	}
	if a.SignalTimeoutSeconds == 0 {
		a.SignalTimeoutSeconds = DefaultSignalTimeoutSeconds
	}
	if a.OnSignalLoss == "" {
		a.OnSignalLoss = SignalLossStop
	}
	return a
}

// Validate reports the first invalid setting of a, for an event admitting
// at most ceiling users a minute, as a CodeInvalidConfig error.
func (a *Adaptive) Validate(ceiling int) error {
	in := func(x, lo, hi float64) bool { return !math.IsNaN(x) && x >= lo && x <= hi }
	switch {
	case ceiling < 1:
		return Errorf(CodeInvalidConfig, "adaptive admission needs admitPerMinute as its ceiling")
	case a.TargetLatencyMs < 1 || a.TargetLatencyMs > MaxTargetLatencyMs:
		return Errorf(CodeInvalidConfig, "adaptive.targetLatencyMs must be between 1 and %d", MaxTargetLatencyMs)
	case !in(a.MaxErrorRate, 0, 1):
		return Errorf(CodeInvalidConfig, "adaptive.maxErrorRate must be between 0 and 1")
	case !in(a.MaxLoad, 0.01, MaxHealthLoad):
		return Errorf(CodeInvalidConfig, "adaptive.maxLoad must be between 0.01 and %g", MaxHealthLoad)
	case a.MinAdmitPerMinute < 0 || a.MinAdmitPerMinute > ceiling:
		return Errorf(CodeInvalidConfig, "adaptive.minAdmitPerMinute must be between 0 and admitPerMinute (%d)", ceiling)
	case a.StartAdmitPerMinute < a.MinAdmitPerMinute || a.StartAdmitPerMinute > ceiling:
		return Errorf(CodeInvalidConfig, "adaptive.startAdmitPerMinute must be between minAdmitPerMinute and admitPerMinute (%d)", ceiling)
	case a.IncreasePerStep < 1 || a.IncreasePerStep > ceiling:
		return Errorf(CodeInvalidConfig, "adaptive.increasePerStep must be between 1 and admitPerMinute (%d)", ceiling)
	case !in(a.DecreaseFactor, 0.1, 0.95):
		return Errorf(CodeInvalidConfig, "adaptive.decreaseFactor must be between 0.1 and 0.95")
	case a.StepMs < MinStepMs || a.StepMs > MaxStepMs:
		return Errorf(CodeInvalidConfig, "adaptive.stepMs must be between %d and %d", MinStepMs, MaxStepMs)
	case a.MaxSettleSeconds < 1 || a.MaxSettleSeconds > MaxStaySeconds:
		return Errorf(CodeInvalidConfig, "adaptive.maxSettleSeconds must be between 1 and %d", MaxStaySeconds)
	case a.SignalTimeoutSeconds < 1 || a.SignalTimeoutSeconds > MaxSignalTimeoutSeconds || a.SignalTimeoutSeconds*1000 < a.StepMs:
		return Errorf(CodeInvalidConfig, "adaptive.signalTimeoutSeconds must be between 1 and %d, and at least stepMs", MaxSignalTimeoutSeconds)
	case a.OnSignalLoss != SignalLossStop && a.OnSignalLoss != SignalLossKeep:
		return Errorf(CodeInvalidConfig, "adaptive.onSignalLoss must be %q or %q", SignalLossStop, SignalLossKeep)
	}
	return nil
}

// ReportTokenLength bounds an event's report token.
const (
	MinReportTokenLength = 24
	MaxReportTokenLength = 128
)

var reportTokenRE = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

// CheckReportToken reports whether t can be an event's report token, as an
// invalid_config error.
func CheckReportToken(t string) error {
	if len(t) < MinReportTokenLength || len(t) > MaxReportTokenLength || !reportTokenRE.MatchString(t) {
		return Errorf(CodeInvalidConfig, "reportToken must be %d to %d letters, digits, - or _", MinReportTokenLength, MaxReportTokenLength)
	}
	return nil
}

// Reasons of a rate change (RateChange.Reason), also the label of the
// changes counted in /metrics.
const (
	ReasonStart      = "start"       // the controller's first rate
	ReasonHealthy    = "healthy"     // an increase: healthy and the rate in use
	ReasonLatency    = "latency"     // a decrease: p95 over the target
	ReasonErrors     = "errors"      // a decrease: error share over the limit
	ReasonLoad       = "load"        // a decrease: load over the limit
	ReasonNoSignal   = "no_signal"   // admission stopped, or kept, for want of reports
	ReasonSignalBack = "signal_back" // reports again after a loss
)

// RateChange is one change of an event's effective admission rate.
type RateChange struct {
	At     int64  `json:"at"` // unix ms
	From   int    `json:"from"`
	To     int    `json:"to"`
	Reason string `json:"reason"`
	// Detail says it for a person, with the figures.
	Detail string `json:"detail"`
}

// ControlStatus is where an adaptive event's controller stands.
type ControlStatus struct {
	// AdmitPerMinute is the effective rate admission uses now.
	AdmitPerMinute int `json:"admitPerMinute"`
	// Rate is the controller's rate: AdmitPerMinute, unless the signal is
	// lost and admission stopped (then 0) while Rate is kept for when the
	// reports come back.
	Rate int `json:"rate"`
	// Phase is "start" while the rate doubles, "steady" after the first
	// decrease.
	Phase      string `json:"phase"`
	SignalLost bool   `json:"signalLost"`
	// Reason and Detail are those of the last change, at ChangedAt.
	Reason    string `json:"reason"`
	Detail    string `json:"detail"`
	ChangedAt int64  `json:"changedAt"`
	// Signal is the reports' worst figures as the last step used them, at
	// SignalAt (nil before the first step).
	Signal    *Signal `json:"signal,omitempty"`
	SignalAt  int64   `json:"signalAt,omitempty"`
	Increases int64   `json:"increases"`
	Decreases int64   `json:"decreases"`
	// Stops counts the losses of signal that stopped admission.
	Stops int64 `json:"stops"`
	// Changes are the latest changes, newest first.
	Changes []RateChange `json:"changes"`
}

// Signal is the reports' combined figures a controller step used: the
// highest p95 and load, the error share over all requests, the longest
// window, the requests summed, and how many reporters gave them.
type Signal struct {
	HealthReport
	Reporters int `json:"reporters"`
}

// ReporterHealth is one reporter's latest report, as received at At.
type ReporterHealth struct {
	HealthReport
	At int64 `json:"at"` // unix ms
}
