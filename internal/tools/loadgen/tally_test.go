package loadgen

import (
	"bytes"
	"testing"
)

func TestTally(t *testing.T) {
	a, b := newTally(), newTally()
	a.add("status 503", "first 503")
	a.add("status 503", "second 503")
	b.add("status 503", "b's 503")
	b.add("transport", "reset")
	a.addAll(b)
	if a.total() != 4 || a.counts["status 503"] != 3 || a.samples["status 503"] != "first 503" || a.samples["transport"] != "reset" {
		t.Fatalf("after addAll: %+v", a)
	}
	if got := a.first(); got != "status 503: first 503" {
		t.Fatalf("first: %q", got)
	}
	var w bytes.Buffer
	a.print(&w, "errors x  ")
	if want := "errors x  status 503: 3, e.g. first 503\nerrors x  transport: 1, e.g. reset\n"; w.String() != want {
		t.Fatalf("print:\n%s\nwant:\n%s", w.String(), want)
	}
	var zero tally
	if zero.total() != 0 || zero.first() != "" {
		t.Fatal("the zero tally is not empty")
	}
}
