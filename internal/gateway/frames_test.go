package gateway

import (
	"encoding/json"
	"testing"

	"github.com/coder/websocket"

	"github.com/waitq/waitq/internal/queue"
)

func TestPlaceState(t *testing.T) {
	const now, pending = 10_000, 2_000
	tests := []struct {
		name  string
		p     queue.Place
		h     socketView
		state UserState
		pos   int64
	}{
		{"holding", queue.Place{Rank: -1, StayUntil: now + 1}, socketView{}, StateAdmitted, 0},
		{"stay ended, not yet expired", queue.Place{Rank: -1, StayUntil: now}, socketView{admitted: true}, StateExpired, 0},
		{"released after admission", queue.Place{Rank: -1, StayUntil: -1}, socketView{admitted: true}, StateExpired, 0},
		{"released after admission, read after the frame", queue.Place{Rank: -1, StayUntil: -1}, socketView{admitted: true, admittedAtMs: now - 1}, StateExpired, 0},
		// A read begun before the admitted frame was sent (the campaign's
		// finding): the user is still in line there, and is told so, not
		// that the turn passed.
		{"admitted just after the read", queue.Place{Rank: 0, StayUntil: -1}, socketView{admitted: true, admittedAtMs: now}, StateWaiting, 1},
		{"fast-tracked just after the read", queue.Place{Rank: -1, StayUntil: -1}, socketView{admitted: true, admittedAtMs: now + 5, joinedAtMs: now - 100}, StatePending, 0},
		{"admitted while away, the stay over and expired", queue.Place{Rank: -1, StayUntil: 0}, socketView{joinedAtMs: now - 100}, StateExpired, 0},
		{"head of line", queue.Place{Rank: 0, StayUntil: -1}, socketView{}, StateWaiting, 1},
		{"twelfth", queue.Place{Rank: 11, StayUntil: -1}, socketView{}, StateWaiting, 12},
		{"joined a moment ago", queue.Place{Rank: -1, StayUntil: -1}, socketView{joinedAtMs: now - 100}, StatePending, 0},
		{"joined, was in line, left", queue.Place{Rank: -1, StayUntil: -1}, socketView{joinedAtMs: now - 100, placed: true}, StateNotQueued, 0},
		{"joined long ago, gone", queue.Place{Rank: -1, StayUntil: -1}, socketView{joinedAtMs: now - pending}, StateNotQueued, 0},
		{"never joined", queue.Place{Rank: -1, StayUntil: -1}, socketView{}, StateNotQueued, 0},
		{"in a drop's pre-queue: no position", queue.Place{Rank: queue.RankPrequeue, StayUntil: -1}, socketView{}, StatePrequeue, 0},
		{"pre-queue join not yet in Redis", queue.Place{Rank: -1, StayUntil: -1}, socketView{joinedAtMs: now - 100}, StatePending, 0},
		{"drawn, after the opening", queue.Place{Rank: 4, StayUntil: -1, Drawn: 9}, socketView{}, StateWaiting, 5},
		{"waiting while the event is rebuilt", queue.Place{Rank: queue.RankRebuilding, StayUntil: -1}, socketView{placed: true}, StateRebuilding, 0},
		{"admitted, rebuilt hold not yet written", queue.Place{Rank: queue.RankRebuilding, StayUntil: -1}, socketView{admitted: true}, StateRebuilding, 0},
		{"holding while the event is rebuilt", queue.Place{Rank: queue.RankRebuilding, StayUntil: now + 1}, socketView{admitted: true}, StateAdmitted, 0},
	}
	for _, tc := range tests {
		st, pos := placeState(tc.p, now, tc.h, pending)
		if st != tc.state || pos != tc.pos {
			t.Errorf("%s: %s %d, want %s %d", tc.name, st, pos, tc.state, tc.pos)
		}
	}
}

func TestRateAndETA(t *testing.T) {
	r := newRates()
	// observe measures admittedTotal at nowMs (an event of unknown
	// configuration) and returns the rate (0 until a second has passed
	// since the first).
	observe := func(ev string, total, nowMs int64) float64 {
		return r.measure(nil, ev, queue.StatusBatch{AdmittedTotal: total}, nowMs).perSecond
	}
	if got := observe("e", 0, 0); got != 0 {
		t.Fatalf("first observation %v", got)
	}
	if etaSeconds(5, 0) != nil {
		t.Fatal("an ETA without a rate")
	}
	observe("e", 10, 5_000) // 2 per second
	got := observe("e", 20, 10_000)
	if got < 1.99 || got > 2.01 {
		t.Fatalf("rate %v, want 2/s", got)
	}
	if eta := etaSeconds(5, got); eta == nil || *eta != 3 {
		t.Fatalf("eta of position 5 at 2/s = %v, want 3", eta)
	}
	// Admissions stop: the rate decays, the ETA grows.
	slower := observe("e", 20, 15_000)
	if slower >= got {
		t.Fatalf("rate %v did not decay from %v", slower, got)
	}
}

// FuzzClientFrame: a client frame is either leave, release or an
// invalid_body error; nothing panics.
func FuzzClientFrame(f *testing.F) {
	for _, s := range []string{`{"type":"leave"}`, `{"type":"release"}`, `{"type":"jump"}`, `{}`, `[`, `{"type":1}`} {
		f.Add(s, true)
	}
	f.Add(`{"type":"leave"}`, false)
	f.Fuzz(func(t *testing.T, data string, text bool) {
		typ := websocket.MessageBinary
		if text {
			typ = websocket.MessageText
		}
		kind, err := parseClientFrame(typ, []byte(data))
		switch {
		case err != nil:
			if queue.ErrorCode(err) != queue.CodeInvalidBody || kind != "" {
				t.Fatalf("%q: %q, %v", data, kind, err)
			}
		case kind != FrameLeave && kind != FrameRelease, !text:
			t.Fatalf("%q (text %v) parsed as %q", data, text, kind)
		}
	})
}

// TestAppendStatusMatchesJSON: the hand-built frame is byte for byte what
// encoding/json writes, for every state, with and without an ETA.
func TestAppendStatusMatchesJSON(t *testing.T) {
	eta := int64(42)
	for _, st := range []UserState{StatePending, StatePrequeue, StateWaiting, StateAdmitted, StateExpired, StateNotQueued, StateRebuilding} {
		for _, e := range []*int64{nil, &eta} {
			for _, drop := range []struct{ opensAt, opensIn, drawn int64 }{{}, {1_795_310_100_000, 28, 0}, {0, 0, 77}} {
				f := StatusFrame{Type: "status", EventID: "Sale_2026-11", UserID: "alice@example.com:7.x", State: st,
					Position: 12, Total: 340, ETASeconds: e, TS: 1_795_310_072_135,
					OpensAt: drop.opensAt, OpensInSeconds: drop.opensIn, DrawnPlace: drop.drawn}
				want, _ := json.Marshal(f)
				if got := appendStatus(nil, &f); string(got) != string(want) {
					t.Fatalf("appendStatus = %s\nwant         %s", got, want)
				}
			}
		}
	}
}

// FuzzAppendStatus: for any valid ids and numbers the frame equals
// json.Marshal's.
func FuzzAppendStatus(f *testing.F) {
	f.Add("e1", "u1", int64(1), int64(2), int64(-1), int64(5))
	f.Fuzz(func(t *testing.T, ev, user string, pos, total, eta, ts int64) {
		if !queue.ValidEventID(ev) || !queue.ValidUserID(user) {
			return
		}
		fr := StatusFrame{Type: "status", EventID: ev, UserID: user, State: StateWaiting, Position: pos, Total: total, TS: ts}
		if eta >= 0 {
			fr.ETASeconds = &eta
		}
		want, _ := json.Marshal(fr)
		if got := appendStatus([]byte("stale"), &fr)[len("stale"):]; string(got) != string(want) {
			t.Fatalf("appendStatus = %s, want %s", got, want)
		}
	})
}
