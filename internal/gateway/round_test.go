package gateway

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/waitq/waitq/internal/queue"
)

// TestSlicerIsTheHubsSlicing checks that the hub's slices hold exactly the
// users its slicer places in them, every slice used: a measurement slicing
// with a slicer reads the users together a gateway's round reads.
func TestSlicerIsTheHubsSlicing(t *testing.T) {
	h := newHub()
	want := map[int][]string{}
	for i := range 2000 {
		c := &conn{identity: identity{eventID: "sale" + fmt.Sprint(i%3), userID: fmt.Sprintf("user%04d", i)}}
		h.add(c)
		j := h.slicer.Slice(c.eventID, c.userID)
		want[j] = append(want[j], c.eventID+"/"+c.userID)
	}
	for j := range statusSlices {
		var got []string
		h.eachInSlice(j, func(c *conn) { got = append(got, c.eventID+"/"+c.userID) })
		slices.Sort(got)
		slices.Sort(want[j])
		if len(got) == 0 || !slices.Equal(got, want[j]) {
			t.Fatalf("slice %d: the hub holds %d users, the slicer places %d there", j, len(got), len(want[j]))
		}
	}
}

// TestRunRound checks the slices' order and spread, and that an ended
// context stops the round.
func TestRunRound(t *testing.T) {
	var seen []int
	start := time.Now()
	if !runRound(context.Background(), 160*time.Millisecond, func(j int) { seen = append(seen, j) }) {
		t.Fatal("runRound = false with a live context")
	}
	if took := time.Since(start); took < 150*time.Millisecond {
		t.Fatalf("16 slices over 160ms took %s", took)
	}
	if len(seen) != statusSlices || !slices.IsSorted(seen) {
		t.Fatalf("slices %v", seen)
	}
	ctx, cancel := context.WithCancel(context.Background())
	n := 0
	if runRound(ctx, time.Second, func(int) { n++; cancel() }) || n != 1 {
		t.Fatalf("after the context ended: %d slices run", n)
	}
}

// recordingReader records the Status calls it answers.
type recordingReader struct {
	mu    sync.Mutex
	calls map[string][]string
}

func (r *recordingReader) Status(ctx context.Context, ev string, users []string, nowMs int64) (queue.StatusBatch, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := ctx.Deadline(); !ok {
		return queue.StatusBatch{}, fmt.Errorf("no deadline")
	}
	r.calls[ev] = users
	b := queue.StatusBatch{Total: int64(len(users))}
	for i := range users {
		b.Places = append(b.Places, queue.Place{Rank: int64(i)})
	}
	return b, nil
}

// TestReadEvents checks one Status call per event with its users, bounded
// and stamped with now.
func TestReadEvents(t *testing.T) {
	r := &recordingReader{calls: map[string][]string{}}
	users := map[string][]string{}
	for i := range 20 {
		users[fmt.Sprint("ev", i)] = []string{"a", "b", fmt.Sprint("u", i)}
	}
	now := time.UnixMilli(1_700_000_000_000)
	var mu sync.Mutex
	got := map[string]int64{}
	readEvents(context.Background(), r, users, time.Second, func() time.Time { return now },
		func(ev string, b queue.StatusBatch, nowMs int64, err error) {
			if err != nil || nowMs != now.UnixMilli() || len(b.Places) != 3 {
				t.Errorf("%s: %v, now %d, %d places", ev, err, nowMs, len(b.Places))
			}
			mu.Lock()
			got[ev] = b.Total
			mu.Unlock()
		})
	if len(got) != len(users) || len(r.calls) != len(users) {
		t.Fatalf("%d replies, %d calls for %d events", len(got), len(r.calls), len(users))
	}
	for ev, us := range users {
		if !slices.Equal(r.calls[ev], us) {
			t.Fatalf("%s read %v, want %v", ev, r.calls[ev], us)
		}
	}
}
