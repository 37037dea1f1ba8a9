package sse_test

import (
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/waitq/waitq/internal/testkit/sse"
)

func TestReader(t *testing.T) {
	long := strings.Repeat("x", 100)
	stream := "retry: 3000\n\n" +
		": a comment\n\n" +
		"event: status\ndata: {\"a\":1}\n\n" +
		"event: admitted\r\nid: a42\r\ndata: one\r\ndata: two\r\n\r\n" +
		"data:" + long + "\n\n" +
		"id\n\n" + // an empty id with no data: no event, but the id is reset
		"event: status\ndata: {}\n\n" +
		"event: cut\ndata: never dispatched\n"
	r := sse.NewReader(strings.NewReader(stream), 16)
	want := []struct{ typ, id, data, last string }{
		{"status", "", `{"a":1}`, ""},
		{"admitted", "a42", "one\ntwo", "a42"},
		{"message", "", long, "a42"},
		{"status", "", "{}", ""},
	}
	for i, w := range want {
		ev, err := r.Next()
		if err != nil {
			t.Fatalf("event %d: %v", i, err)
		}
		if ev.Type != w.typ || ev.ID != w.id || string(ev.Data) != w.data || r.LastEventID() != w.last {
			t.Fatalf("event %d: %q %q %q (last id %q), want %+v", i, ev.Type, ev.ID, ev.Data, r.LastEventID(), w)
		}
		if r.Retry() != 3000 {
			t.Fatalf("retry %d", r.Retry())
		}
	}
	if _, err := r.Next(); !errors.Is(err, io.EOF) {
		t.Fatalf("a stream ended inside an event: %v", err)
	}
	if _, err := sse.NewReader(strings.NewReader("data: cut"), 16).Next(); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("a stream cut inside a line: %v", err)
	}
	if _, err := sse.NewReader(strings.NewReader(""), 16).Next(); !errors.Is(err, io.EOF) {
		t.Fatalf("an empty stream: %v", err)
	}
}
