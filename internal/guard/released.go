package guard

import (
	"context"
	"net/http"

	"github.com/waitq/waitq/pkg/entry"
)

// newReleased returns the source of the event's released admissions on the
// gateway, or nil (nothing refused beyond what verifies) without a
// GatewayURL or with ReleasedInterval 0. Call it before the guard is built.
func (g *Proxy) newReleased(cfg Config, client *http.Client) *entry.ReleasedSource {
	if cfg.GatewayURL == "" || cfg.ReleasedInterval <= 0 {
		return nil
	}
	g.released = entry.NewReleasedSource(entry.ReleasedURL(cfg.GatewayURL, cfg.EventID), client)
	g.releasedEvery = cfg.ReleasedInterval
	return g.released
}

// RunReleased polls the gateway's released admissions every
// ReleasedInterval until ctx ends, so that a token whose slot was given
// back (on any guard, any gateway) is refused within about that long. A
// failed poll keeps the last list; it is counted
// (waitq_guard_released_refresh_errors_total) and logged. It returns at
// once when the list is off.
func (g *Proxy) RunReleased(ctx context.Context) {
	if g.released == nil {
		return
	}
	if err := g.released.Refresh(ctx); err != nil {
		g.releasedFailed(err)
	}
	g.released.Run(ctx, g.releasedEvery, g.releasedFailed)
}

func (g *Proxy) releasedFailed(err error) {
	g.m.releasedErrors.Inc()
	g.log.Warn("polling the gateway's released admissions failed; the last list stays in use", "event", g.eventID, "err", err)
}
