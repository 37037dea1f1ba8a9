package redisstore

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/waitq/waitq/internal/queue"
)

// decodeElement reads one element of the line's journal as
// lua/journal_lib.lua writes it: "<epoch> <seq>", then one line per change
// ("+", "-", "d": a key; "p<n>": n admitted and the last key; "x": a user).
func decodeElement(s string) (queue.JournalElement, error) {
	bad := func() (queue.JournalElement, error) {
		return queue.JournalElement{}, fmt.Errorf("unexpected journal element %q", s)
	}
	lines := strings.Split(s, "\n")
	_, seq, ok := strings.Cut(lines[0], " ")
	if !ok {
		return bad()
	}
	var e queue.JournalElement
	var err error
	if e.Seq, err = strconv.ParseInt(seq, 10, 64); err != nil {
		return bad()
	}
	for _, c := range lines[1:] {
		if c == "" {
			continue
		}
		op, rest := c[0], c[1:]
		if op == 'x' {
			e.Detached = append(e.Detached, strings.TrimPrefix(rest, " "))
			continue
		}
		if op == 'p' {
			n, r, _ := strings.Cut(rest, " ")
			if e.Popped, err = strconv.ParseInt(n, 10, 64); err != nil {
				return bad()
			}
			rest = r
		}
		sc, user, ok := strings.Cut(rest, " ")
		score, err := strconv.ParseFloat(sc, 64)
		if !ok || err != nil {
			return bad()
		}
		k := queue.LineKey{Score: score, User: user}
		switch op {
		case '+':
			e.Joined = append(e.Joined, k)
		case '-':
			e.Left = append(e.Left, k)
		case 'd':
			e.Pre = append(e.Pre, k)
		case 'p':
			e.LastPopped = k
		}
	}
	return e, nil
}
