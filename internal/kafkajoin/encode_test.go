package kafkajoin

import (
	"testing"

	"github.com/waitq/waitq/internal/queue"
)

// A record's key and value are the key and the message's JSON, as slices
// of one buffer that do not run into each other.
func TestAppendRecordIsKeyAndEncode(t *testing.T) {
	for _, m := range []queue.Message{
		queue.NewMessage(queue.OpJoin, "ev-1", "alice", 1000),
		queue.NewConfigRecord(queue.Event{ID: "ev", Capacity: 10}, 2000),
	} {
		want, err := m.Encode()
		if err != nil {
			t.Fatal(err)
		}
		k, v, err := appendRecord(nil, "key-1", &m)
		if err != nil {
			t.Fatal(err)
		}
		if string(k) != "key-1" || string(v) != string(want) || cap(k) != len(k) {
			t.Fatalf("%+v: appendRecord = %q (cap %d), %s; want %q, %s", m, k, cap(k), v, "key-1", want)
		}
	}
}
