package producer

import (
	"bytes"
	"cmp"
	"encoding/json"
	"io"

	"github.com/waitq/waitq/internal/httpkit"
	"github.com/waitq/waitq/internal/queue"
)

// The admin PUT's body and how it merges into an event's configuration.

// EventBody is the admin PUT body; omitted fields keep their current value
// (or take the default on creation).
type EventBody struct {
	Capacity    *int `json:"capacity"`
	StaySeconds *int `json:"staySeconds"`
	// HoldSeconds is staySeconds' older spelling, taken when staySeconds
	// is absent.
	HoldSeconds *int `json:"holdSeconds"`
	// AdmitPerMinute is the admission rate (0: no rate limit).
	AdmitPerMinute *int              `json:"admitPerMinute"`
	Partitions     *int              `json:"partitions"`
	State          *queue.EventState `json:"state"`
	// TargetURL is where admitted users are sent ("" removes it).
	TargetURL *string `json:"targetUrl"`
	// OpensAt, PrequeueSeconds and ClosesAt schedule a drop (queue.Schedule);
	// opensAt 0 removes the schedule.
	OpensAt         *int64 `json:"opensAt"`
	PrequeueSeconds *int   `json:"prequeueSeconds"`
	ClosesAt        *int64 `json:"closesAt"`
	// Adaptive turns adaptive admission on with these settings (an object;
	// unset settings take their defaults) or off (null); absent keeps it.
	Adaptive json.RawMessage `json:"adaptive"`
	// ReportToken replaces the event's report token (one is made when the
	// event is created).
	ReportToken *string `json:"reportToken"`
	// ShopToken replaces the event's shop token, the credential of the seat
	// holds' sales (one is made when the event is created).
	ShopToken *string `json:"shopToken"`
	// MaxItemsPerUser is how many items one user may hold or buy (0: 1).
	MaxItemsPerUser *int `json:"maxItemsPerUser"`
	// Challenge replaces the proof-of-work policy (an object) or removes
	// it (null); absent keeps it.
	Challenge json.RawMessage `json:"challenge"`
	// JoinToken replaces the join-token policy (an object) or removes it
	// (null); absent keeps it.
	JoinToken json.RawMessage `json:"joinToken"`
	// Page replaces the waiting room page's branding (an object) or
	// removes it (null); absent keeps it.
	Page json.RawMessage `json:"page"`
	// Away replaces the keeping of places while their people are away (an
	// object) or turns it off (null); absent keeps it.
	Away json.RawMessage `json:"away"`
	// ArrivalSeconds is how long an admitted person has to arrive before
	// their slot is freed as a no-show's (0: off).
	ArrivalSeconds *int `json:"arrivalSeconds"`
	// Draw sets a drop's draw: its publicSource (an object) makes it a
	// chain draw, null a classic one; absent keeps it (drawchain.go).
	Draw *DrawBody `json:"draw"`
}

// DrawBody is the admin PUT's draw object.
type DrawBody struct {
	PublicSource json.RawMessage `json:"publicSource"`
}

// apply merges b's plain fields into ev: a field given replaces ev's, an
// omitted one keeps it. The fields with rules of their own are checked and
// merged apart: adaptive (adapt), the schedule (Server.schedule), and
// partitions, which cannot change after creation (putEvent).
func (b EventBody) apply(ev *queue.Event) {
	set(&ev.Capacity, b.Capacity)
	set(&ev.StaySeconds, cmp.Or(b.StaySeconds, b.HoldSeconds))
	set(&ev.AdmitPerMinute, b.AdmitPerMinute)
	set(&ev.Partitions, b.Partitions)
	set(&ev.State, b.State)
	set(&ev.TargetURL, b.TargetURL)
	set(&ev.ReportToken, b.ReportToken)
	set(&ev.ShopToken, b.ShopToken)
	set(&ev.MaxItemsPerUser, b.MaxItemsPerUser)
	set(&ev.ArrivalSeconds, b.ArrivalSeconds)
}

// set replaces *dst with *v unless v is nil (the field was omitted).
func set[T any](dst, v *T) {
	if v != nil {
		*dst = *v
	}
}

// adapt applies an admin PUT's adaptive field to ev: absent keeps ev's
// setting, null removes it, an object replaces it with the unset settings
// at their defaults for ev's admitPerMinute.
func adapt(ev *queue.Event, raw json.RawMessage) error {
	switch {
	case raw == nil:
		return nil
	case string(raw) == "null":
		ev.Adaptive = nil
		return nil
	}
	var a queue.Adaptive
	if err := httpkit.DecodeJSON(bytes.NewReader(raw), &a, queue.CodeInvalidConfig, "null or an object with targetLatencyMs, maxErrorRate, maxLoad, minAdmitPerMinute, startAdmitPerMinute, increasePerStep, decreaseFactor, stepMs, maxSettleSeconds, signalTimeoutSeconds and onSignalLoss"); err != nil {
		return err
	}
	a = a.WithDefaults(ev.AdmitPerMinute)
	ev.Adaptive = &a
	return nil
}

// replaceAway applies an admin PUT's away field to *dst: absent keeps it,
// null turns it off, an object replaces it whole.
func replaceAway(dst *queue.Away, raw json.RawMessage) error {
	cur := *dst
	p := &cur
	if !cur.On() {
		p = nil
	}
	if err := replacePolicy(&p, raw, "null or an object with keepSeconds and claimSeconds"); err != nil {
		return err
	}
	*dst = queue.Away{}
	if p != nil {
		*dst = *p
		if !dst.On() {
			return queue.Errorf(queue.CodeInvalidConfig, "away needs keepSeconds and claimSeconds, or null to turn it off")
		}
	}
	return nil
}

// replacePolicy applies an admin PUT's policy field (challenge, joinToken)
// to *dst: absent keeps it, null removes it, an object replaces it whole.
func replacePolicy[T any](dst **T, raw json.RawMessage, want string) error {
	switch {
	case raw == nil:
		return nil
	case string(raw) == "null":
		*dst = nil
		return nil
	}
	v := new(T)
	if err := httpkit.DecodeJSON(bytes.NewReader(raw), v, queue.CodeInvalidConfig, want); err != nil {
		return err
	}
	*dst = v
	return nil
}

func decodeEventBody(r io.Reader) (EventBody, error) {
	var b EventBody
	err := httpkit.DecodeJSON(r, &b, queue.CodeInvalidConfig, "a JSON object with capacity, staySeconds (or its older spelling holdSeconds), admitPerMinute, partitions, state, targetUrl, opensAt, prequeueSeconds, closesAt, adaptive, reportToken, shopToken, maxItemsPerUser, challenge, joinToken, page, away and arrivalSeconds")
	return b, err
}
