package chaos

import (
	"fmt"
	"time"
)

// checkAway proves that nobody who came back within the claim window lost
// the turn (docs/api.md, away): a client told its turn lapsed must have
// been out of touch (away on purpose, or with no status) for the window at
// least. away is each user's longest absence (status gaps and walks
// away); the deliberate absences are added here.
func (r *Report) checkAway(h *History, cfg Config, away map[userKey]time.Duration) {
	r.Aways = len(h.Aways)
	for _, a := range h.Aways {
		k := userKey{a.Event, a.User}
		away[k] = max(away[k], a.To.Sub(a.From))
	}
	for _, l := range h.Lapses {
		k := userKey{l.Event, l.User}
		if cfg.ClaimWindow > 0 && away[k] >= cfg.ClaimWindow {
			continue
		}
		r.LostTurns = append(r.LostTurns, fmt.Sprintf("%s/%s told its turn lapsed at %s, never away for the %v window (longest %v)",
			l.Event, l.User, l.At.Format("15:04:05.000"), cfg.ClaimWindow, away[k].Round(time.Second)))
	}
}
