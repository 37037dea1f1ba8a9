package redisstore

import (
	"reflect"
	"testing"

	"github.com/waitq/waitq/internal/queue"
)

// decodeElement reads every line journal_lib.lua writes, and refuses what
// it does not write.
func TestDecodeElement(t *testing.T) {
	key := func(score float64, user string) queue.LineKey { return queue.LineKey{Score: score, User: user} }
	for _, tc := range []struct {
		name string
		in   string
		want queue.JournalElement
		bad  bool
	}{
		{name: "join ahead", in: "e 7\n+5 u7", want: queue.JournalElement{Seq: 7, Joined: []queue.LineKey{key(5, "u7")}}},
		{name: "every change", in: "1700000000000000 3\n+1000 a\n-1001.5 b\np2 999 c\nd-4503599627370495 d\nx e\n",
			want: queue.JournalElement{Seq: 3, Joined: []queue.LineKey{key(1000, "a")}, Left: []queue.LineKey{key(1001.5, "b")},
				Popped: 2, LastPopped: key(999, "c"), Pre: []queue.LineKey{key(-4503599627370495, "d")}, Detached: []string{"e"}}},
		{name: "user with spaces", in: "e 1\n+5 a b", want: queue.JournalElement{Seq: 1, Joined: []queue.LineKey{key(5, "a b")}}},
		{name: "no changes", in: "e 2", want: queue.JournalElement{Seq: 2}},
		{name: "no seq", in: "e", bad: true},
		{name: "bad seq", in: "e x\n+5 a", bad: true},
		{name: "bad score", in: "e 1\n+five a", bad: true},
		{name: "no user", in: "e 1\n-5", bad: true},
		{name: "bad count", in: "e 1\npn 5 a", bad: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := decodeElement(tc.in)
			if tc.bad {
				if err == nil {
					t.Fatalf("decodeElement(%q) = %+v, want an error", tc.in, got)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("decodeElement(%q) = %+v, %v; want %+v", tc.in, got, err, tc.want)
			}
		})
	}
}

// An element line.lua returns that is not what journal_lib.lua writes
// makes the read a reset: its reader learns every place again.
func TestLineReplyWithABadElementResets(t *testing.T) {
	head := []any{int64(3), int64(0), int64(-1), int64(0), int64(0), int64(10), int64(60000), int64(0), int64(0), int64(0), int64(0)}
	var r queue.LineReply
	if err := decodeLineReply([]any{head, "e", int64(3), int64(0), []any{"e 2\n+5 a", "e 3\n+five b"}, []any{}}, &r); err != nil {
		t.Fatal(err)
	}
	if !r.Reset || len(r.Elements) != 0 || r.At != (queue.JournalPos{Epoch: "e", Seq: 3}) {
		t.Fatalf("reply %+v, want a reset at e 3 with no elements", r)
	}
}
