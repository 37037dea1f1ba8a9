package entry

// What KeySource and ReleasedSource share: one GET of a gateway document,
// and the loop that refreshes it.

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"time"
)

// fetch GETs url with c and returns its body (at most limit bytes); any
// answer but 200 is an error naming what was fetched.
func fetch(ctx context.Context, c *http.Client, url, what string, limit int64) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := c.Do(req)
	if err != nil {
		return nil, fmt.Errorf("entry: fetch %s: %w", what, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("entry: fetch %s: %s", what, resp.Status)
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, limit))
	if err != nil {
		return nil, fmt.Errorf("entry: fetch %s: %w", what, err)
	}
	return b, nil
}

// poll calls refresh every interval until ctx ends, reporting failures to
// onErr when it is not nil. Until loaded reports true (a guard started
// before its gateway) it tries every second, doubling up to every.
func poll(ctx context.Context, every time.Duration, loaded func() bool, refresh func(context.Context) error, onErr func(error)) {
	wait := every
	if !loaded() {
		wait = min(time.Second, every)
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if err := refresh(ctx); err != nil && onErr != nil {
				onErr(err)
			}
			if wait = min(2*wait, every); loaded() {
				wait = every
			}
			t.Reset(wait)
		}
	}
}
