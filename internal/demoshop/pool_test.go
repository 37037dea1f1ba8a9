package demoshop_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/waitq/waitq/internal/demoshop"
	"github.com/waitq/waitq/internal/testkit/testenv"
)

// serve runs shop on a real server until the test ends.
func serve(t *testing.T, shop *demoshop.Shop) string {
	t.Helper()
	srv := httptest.NewServer(shop)
	t.Cleanup(srv.Close)
	return srv.URL
}

// fetch GETs url and returns the status, the body and how long it took.
func fetch(t *testing.T, ctx context.Context, url string) (int, string, time.Duration, error) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, "", time.Since(start), err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), time.Since(start), nil
}

// TestWorkersLimitThePagesInService sends more pages at once than the shop
// has workers: never more than Workers are in service, so serving them all
// takes at least ceil(pages/Workers) work times, and each page at least one.
func TestWorkersLimitThePagesInService(t *testing.T) {
	tests := []struct {
		workers, pages int
		work           time.Duration
	}{
		{2, 6, 50 * time.Millisecond},
		{1, 3, 30 * time.Millisecond},
		{3, 7, 40 * time.Millisecond},
	}
	for _, tc := range tests {
		t.Run(strconv.Itoa(tc.workers)+" workers, "+strconv.Itoa(tc.pages)+" pages", func(t *testing.T) {
			shop := newShop(t, demoshop.Config{Workers: tc.workers, WorkTime: tc.work, QueueTimeout: time.Minute})
			base := serve(t, shop)
			lat := make([]time.Duration, tc.pages)
			var wg sync.WaitGroup
			start := time.Now()
			for i := range tc.pages {
				wg.Go(func() {
					status, body, d, err := fetch(t, context.Background(), base+"/product/"+strconv.Itoa(i%3+1))
					if err != nil || status != 200 || !strings.Contains(body, `action="/order"`) {
						t.Errorf("page %d: %d %v", i, status, err)
					}
					lat[i] = d
				})
			}
			wg.Wait()
			span := time.Since(start)
			rounds := (tc.pages + tc.workers - 1) / tc.workers
			if least := time.Duration(rounds) * tc.work; span < least {
				t.Errorf("%d pages served in %v by %d workers of %v: at least %v", tc.pages, span, tc.workers, tc.work, least)
			}
			for i, d := range lat {
				if d < tc.work {
					t.Errorf("page %d took %v, less than the work time %v", i, d, tc.work)
				}
			}
			st := shop.Stats()
			if st.Peak < 1 || st.Peak > tc.workers || st.InService != 0 || st.Waiting != 0 {
				t.Errorf("stats %+v: want a peak of 1 to %d, nothing left in service or waiting", st, tc.workers)
			}
		})
	}
}

// TestBusyShopAnswers503 holds the only worker: a page that cannot get it
// within the queue timeout is answered 503, while static files and the
// health check need no worker.
func TestBusyShopAnswers503(t *testing.T) {
	shop := newShop(t, demoshop.Config{Workers: 1, WorkTime: time.Minute, QueueTimeout: 50 * time.Millisecond})
	base := serve(t, shop)

	// The holder keeps the worker until the test lets it go.
	ctx, cancel := context.WithCancel(context.Background())
	held := make(chan error, 1)
	go func() {
		_, _, _, err := fetch(t, ctx, base+"/")
		held <- err
	}()
	testenv.Eventually(t, 10*time.Second, func() (bool, string) {
		st := shop.Stats()
		return st.InService == 1, "stats " + strconv.Itoa(st.InService) + " in service"
	})

	req, _ := http.NewRequest(http.MethodGet, base+"/product/1", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(string(body), "The shop is busy") ||
		resp.Header.Get("Retry-After") == "" || resp.Header.Get("Content-Type") != "text/html; charset=utf-8" {
		t.Fatalf("page with the worker held: %d %q %v", resp.StatusCode, body, resp.Header)
	}
	for _, p := range []string{"/static/shop.css", "/healthz"} {
		if status, _, _, err := fetch(t, context.Background(), base+p); err != nil || status != 200 {
			t.Errorf("%s with the worker held: %d %v", p, status, err)
		}
	}
	if st := shop.Stats(); st.InService != 1 || st.Waiting != 0 || st.Peak != 1 {
		t.Errorf("stats %+v: want the holder alone in service", st)
	}

	// The holder leaves: its worker comes back.
	cancel()
	if err := <-held; err == nil {
		t.Fatal("the holder got its page")
	}
	testenv.Eventually(t, 10*time.Second, func() (bool, string) {
		st := shop.Stats()
		return st.InService == 0, "stats " + strconv.Itoa(st.InService) + " in service"
	})
}

// TestVisitorsWhoLeaveGiveUpTheirPlace cancels a page waiting for a worker:
// it leaves the queue.
func TestVisitorsWhoLeaveGiveUpTheirPlace(t *testing.T) {
	shop := newShop(t, demoshop.Config{Workers: 1, WorkTime: time.Minute, QueueTimeout: time.Hour})
	base := serve(t, shop)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	errs := make(chan error, 2)
	for range 2 {
		go func() {
			_, _, _, err := fetch(t, ctx, base+"/")
			errs <- err
		}()
	}
	testenv.Eventually(t, 10*time.Second, func() (bool, string) {
		st := shop.Stats()
		return st.InService == 1 && st.Waiting == 1, "in service " + strconv.Itoa(st.InService) + ", waiting " + strconv.Itoa(st.Waiting)
	})
	cancel()
	for range 2 {
		if err := <-errs; err == nil {
			t.Error("a canceled page was answered")
		}
	}
	testenv.Eventually(t, 10*time.Second, func() (bool, string) {
		st := shop.Stats()
		return st.InService == 0 && st.Waiting == 0, "in service " + strconv.Itoa(st.InService) + ", waiting " + strconv.Itoa(st.Waiting)
	})
}
