package redisstore_test

import (
	"context"
	"slices"
	"testing"

	"github.com/waitq/waitq/internal/queue"
	"github.com/waitq/waitq/internal/redisstore"
	"github.com/waitq/waitq/internal/testkit/testenv"
	"github.com/waitq/waitq/internal/testkit/testredis"
)

// TestJournalOrdersTiesByBytesUnderAnyLocale: a join placed ahead of the
// line's last at the same millisecond is noted in the journal by the line's
// own order (the score, then the member's bytes), also on a server whose
// locale collates otherwise. Under en_US.UTF-8, Lua's string < (strcoll)
// puts "a" before "B" and ignores "-", where the sorted set puts "B" and
// "u-1" first; a gateway missing such a note would tell the one behind a
// place too good.
func TestJournalOrdersTiesByBytesUnderAnyLocale(t *testing.T) {
	c := testredis.Start(t, testredis.Locale("en_US.UTF-8")).Client()
	ctx := context.Background()
	collated, err := c.Eval(ctx, "return tostring('B' < 'a') .. ' ' .. tostring('u-1' < 'u0')", nil).Text()
	if err != nil {
		t.Fatal(err)
	}
	if collated != "false false" {
		testenv.Unavailable(t, "redis-server under LC_ALL=en_US.UTF-8 compares %q: the locale is missing (localedef -i en_US -f UTF-8 en_US.UTF-8)", collated)
	}
	s := mustNew(t, c, redisstore.Options{})
	for _, tc := range []struct {
		name  string
		last  string          // the line's last before the batch, at 1000
		batch []queue.Message // of the event "ev"
		want  []string        // journal lines the batch must note
	}{
		// A batch of new users only: the plain step's search.
		{"plain", "a", []queue.Message{msg(queue.OpJoin, "ev", "B", 1000)}, []string{"+1000 B"}},
		{"plain punctuation", "u0", []queue.Message{msg(queue.OpJoin, "ev", "u-1", 1000)}, []string{"+1000 u-1"}},
		// The last joins again (ignored): the general step, one by one.
		{"general", "a", []queue.Message{msg(queue.OpJoin, "ev", "a", 1000), msg(queue.OpJoin, "ev", "D", 1000)}, []string{"+1000 D"}},
		{"general punctuation", "u0", []queue.Message{msg(queue.OpJoin, "ev", "u0", 1000), msg(queue.OpJoin, "ev", "u-2", 1000)}, []string{"+1000 u-2"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ev := testenv.EventID(t)
			mustPut(t, s, ev)
			ingest(t, s, 2000, msg(queue.OpJoin, ev, tc.last, 1000))
			batch := slices.Clone(tc.batch)
			for i := range batch {
				batch[i].EventID = ev
			}
			if r := ingest(t, s, 2000, batch...); r.Joined != 1 {
				t.Fatalf("ingest %+v, want one joined", r)
			}
			order := users(line(t, c, ev))
			if order[len(order)-1] != tc.last {
				t.Fatalf("line %v: the sorted set does not put %q last", order, tc.last)
			}
			got := readState(t, c, ev).journal
			for _, w := range tc.want {
				if !slices.Contains(got, w) {
					t.Errorf("journal %q lacks %q: a join ahead of %q went unnoted", got, w, tc.last)
				}
			}
		})
	}
}

// TestJournalNotesJoinsAheadOfAnotherConsumersLast: a consumer whose last
// sight of the line is behind its batch sends the batch without its notes;
// when another consumer has put later joins in line meanwhile, ingest.lua
// notes the batch's joins placed ahead of them itself.
func TestJournalNotesJoinsAheadOfAnotherConsumersLast(t *testing.T) {
	srv := testredis.Start(t)
	a := mustNew(t, srv.Client(), redisstore.Options{})
	b := mustNew(t, srv.Client(), redisstore.Options{})
	c := srv.Client()
	ev := testenv.EventID(t)
	mustPut(t, a, ev)
	ingest(t, a, 3000, msg(queue.OpJoin, ev, "early", 100)) // a's hint: 100
	ingest(t, b, 3000, msg(queue.OpJoin, ev, "late", 200))  // the line's last: 200
	before := len(readState(t, c, ev).journal)
	if r := ingest(t, a, 3000, msg(queue.OpJoin, ev, "mid1", 150), msg(queue.OpJoin, ev, "mid2", 160), msg(queue.OpJoin, ev, "tail", 250)); r.Joined != 3 {
		t.Fatalf("ingest %+v, want 3 joined", r)
	}
	got := readState(t, c, ev).journal[before:]
	if want := []string{"+150 mid1", "+160 mid2"}; !slices.Equal(got, want) {
		t.Fatalf("journal after a's batch %q, want %q: the joins ahead of b's and only those", got, want)
	}
	// a's hint is now 250, the true last: a batch behind it is not noted.
	if r := ingest(t, a, 3000, msg(queue.OpJoin, ev, "after", 300)); r.Joined != 1 {
		t.Fatalf("ingest %+v, want 1 joined", r)
	}
	if got := readState(t, c, ev).journal[before:]; len(got) != 2 {
		t.Fatalf("journal %q: a join behind everyone was noted", got)
	}
}
