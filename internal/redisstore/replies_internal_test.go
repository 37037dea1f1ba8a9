package redisstore

import (
	"reflect"
	"testing"
)

// The admitting scripts' replies read as their headers' "Returns" say.
func TestDecodeAdmittingReplies(t *testing.T) {
	adm := []any{"a", int64(100), int64(90), "b", int64(101), int64(91)}
	wantAdmit := admitReply{expiresAt: 5000, expired: []string{"z"},
		admitted: []admittedUser{{user: "a", score: 100, served: 90, expires: 5000}, {user: "b", score: 101, served: 91, expires: 5000}}}

	in, err := decodeIngestReply([]any{int64(3), int64(1), int64(2), int64(2), int64(1), int64(5000), adm, []any{"z"}, int64(4), int64(1234)})
	want := ingestReply{joined: 3, left: 1, ignored: 2, admitted: 2, inversions: 1, admit: wantAdmit, holdsExpired: 4, last: lineLast{1234, true}}
	if err != nil || !reflect.DeepEqual(in, want) {
		t.Errorf("ingest reply %+v, %v; want %+v", in, err, want)
	}
	in, err = decodeIngestReply([]any{int64(0), int64(0), int64(0), int64(0), int64(0), int64(0), []any{}, []any{}, int64(0), nil})
	if err != nil || in.last.known {
		t.Errorf("ingest reply of an empty line %+v, %v; want no last", in, err)
	}
	if _, err := decodeIngestReply([]any{int64(1)}); err == nil {
		t.Error("a short ingest reply read")
	}

	tk, err := decodeTickReply([]any{int64(5000), int64(7), int64(40), adm, []any{"z"}, []any{"s", int64(6000), int64(80)}, int64(2), []any{"m"},
		[]any{"c", int64(100), int64(9000), int64(4000)}, []any{"l"}, int64(3)})
	wantTick := tickReply{admit: wantAdmit, holders: 7, waiting: 40, stale: []admittedUser{{user: "s", score: 6000, served: 80}}, holdsExpired: 2, freeing: []string{"m"},
		called: []admittedUser{{user: "c", score: 100, expires: 9000, served: 4000}}, lapsed: []string{"l"}, noShows: 3}
	if err != nil || !reflect.DeepEqual(tk, wantTick) {
		t.Errorf("tick reply %+v, %v; want %+v", tk, err, wantTick)
	}
	if _, err := decodeTickReply([]any{int64(5000), int64(7), int64(40), []any{"a", int64(1)}, []any{}, []any{}, int64(0), []any{}, []any{}, []any{}, int64(0)}); err == nil {
		t.Error("a tick reply with a broken triple read")
	}
	if _, err := decodeTickReply([]any{int64(5000), int64(7), int64(40), []any{}, []any{}, []any{}, int64(0), []any{}, []any{"c", int64(1)}, []any{}, int64(0)}); err == nil {
		t.Error("a tick reply with a broken call read")
	}

	sw, err := decodeSweepReply([]any{"u", int64(10), "v", int64(11)})
	if want := []swept{{"u", 10}, {"v", 11}}; err != nil || !reflect.DeepEqual(sw, want) {
		t.Errorf("sweep reply %+v, %v; want %+v", sw, err, want)
	}

	rl, err := decodeReleaseReply([]any{int64(1), int64(5000), adm, []any{"z"}, int64(3), int64(77), "m"})
	wantRelease := releaseReply{released: true, admit: wantAdmit, holdsExpired: 3, served: 77, freeing: "m"}
	if err != nil || !reflect.DeepEqual(rl, wantRelease) {
		t.Errorf("release reply %+v, %v; want %+v", rl, err, wantRelease)
	}
}
