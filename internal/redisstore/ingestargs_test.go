package redisstore

import (
	"testing"

	"github.com/waitq/waitq/internal/queue"
)

// TestPlainBatchCarriesNotesUnlessBehindTheLast: a plain batch's last
// argument is its journal notes, empty when the caller's hint of the line's
// last says every join of it goes behind; a batch that is not plain has no
// notes argument.
func TestPlainBatchCarriesNotesUnlessBehindTheLast(t *testing.T) {
	joins := func(ops ...queue.Op) []*queue.LogMessage {
		var out []*queue.LogMessage
		for i, op := range ops {
			out = append(out, &queue.LogMessage{Message: queue.Message{V: 1, Op: op, EventID: "e", UserID: "u" + string(rune('a'+i)), TS: int64(100 + i)}, Offset: queue.NoOffset})
		}
		return out
	}
	const notes = "+100 ua\n+101 ub\n"
	for _, tc := range []struct {
		name string
		msgs []*queue.LogMessage
		last lineLast
		want any // the last argument
	}{
		{"no hint", joins(queue.OpJoin, queue.OpJoin), lineLast{}, notes},
		{"hint behind", joins(queue.OpJoin, queue.OpJoin), lineLast{score: 99, known: true}, ""},
		{"hint at the first stamp", joins(queue.OpJoin, queue.OpJoin), lineLast{score: 100, known: true}, notes},
		{"hint ahead", joins(queue.OpJoin, queue.OpJoin), lineLast{score: 1000, known: true}, notes},
		{"not plain", joins(queue.OpJoin, queue.OpLeave), lineLast{score: 99, known: true}, "-"}, // the stamps column: the leave
	} {
		t.Run(tc.name, func(t *testing.T) {
			args, _ := ingestArgs(tc.msgs, nil, tc.last, 1000)
			got := args[len(args)-1]
			if b, ok := got.([]byte); ok {
				got = string(b)
			}
			if got != tc.want {
				t.Errorf("last argument %q, want %q", got, tc.want)
			}
		})
	}
}
