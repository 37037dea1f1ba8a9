package loadgen

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/waitq/waitq/internal/tools/loadgen/latency"
	"github.com/waitq/waitq/internal/tools/loadgen/report"
)

// loadClient is the one HTTP client every measurement of a run shares: keep-
// alive connections, at most one per concurrent worker, dials counted.
type loadClient struct {
	http  *http.Client
	dials atomic.Int64
}

// newLoadClient returns a client tuned for concurrency keep-alive workers. It
// ignores proxy settings: traffic goes straight to the loopback target.
func newLoadClient(concurrency int) *loadClient {
	lc := &loadClient{}
	d := &net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}
	tr := &http.Transport{
		Proxy: nil,
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			lc.dials.Add(1)
			return d.DialContext(ctx, network, addr)
		},
		MaxIdleConns:        concurrency,
		MaxIdleConnsPerHost: concurrency,
		MaxConnsPerHost:     concurrency,
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  true,
	}
	lc.http = &http.Client{Transport: tr, Timeout: 10 * time.Second}
	return lc
}

// Close drops the idle connections.
func (lc *loadClient) Close() { lc.http.CloseIdleConnections() }

// target is the endpoint a measurement sends joins to.
type target struct {
	name string // row label
	url  string // POST URL
}

// phase is one timed run of all workers against a target.
type phase struct {
	label    string        // progress label
	prefix   string        // user id prefix, unique per phase
	duration time.Duration // time bound
	maxReqs  int64         // count bound
	workers  int
	take     func() bool // hands out each request's turn (nil: the first maxReqs asked)
}

// result is what a phase measured. Latencies are of 202 answers, sorted.
type result struct {
	name    string
	workers int
	elapsed time.Duration
	ok      int
	lat     latency.Sorted
	errs    tally // failed requests by class
	dials   int64
}

// rate returns 202 answers per second.
func (r *result) rate() float64 {
	if r.elapsed <= 0 {
		return 0
	}
	return float64(r.ok) / r.elapsed.Seconds()
}

// worker is one keep-alive client loop with its own latency record.
type worker struct {
	id   int
	lat  []time.Duration
	errs tally
}

// request sends worker w's n-th request; it returns "" when it succeeded,
// else an error class and an example.
type request func(ctx context.Context, w *worker, n int) (class, sample string)

// joinsOf is the request of the joins measurements: a join to url of a user
// named after prefix, the worker and n.
func joinsOf(lc *loadClient, url, prefix string) request {
	return func(ctx context.Context, w *worker, n int) (string, string) {
		return join(ctx, lc.http, url, userOf(prefix, w, n))
	}
}

// userOf names worker w's n-th user of a phase whose users' ids begin with
// prefix.
func userOf(prefix string, w *worker, n int) string {
	return prefix + "c" + strconv.Itoa(w.id) + "-" + strconv.Itoa(n)
}

// measure runs ph with ph.workers workers sending do until ph.duration
// passes, ph.maxReqs requests were sent or ctx ends, printing progress to
// progress once a second, and returns the workers' records merged.
func measure(ctx context.Context, lc *loadClient, t target, ph phase, do request, progress io.Writer) (result, error) {
	workers := make([]*worker, ph.workers)
	for i := range workers { // each with room for twice its share
		workers[i] = &worker{id: i, lat: make([]time.Duration, 0, min(ph.maxReqs, 2*(ph.maxReqs/int64(ph.workers)+1))), errs: newTally()}
	}
	var tickets, done, failed atomic.Int64
	dials0 := lc.dials.Load()
	start := time.Now()
	deadline := start.Add(ph.duration)
	stopProgress := startProgress(progress, ph.label, start, &done, &failed)
	take := ph.take
	if take == nil {
		take = func() bool { return tickets.Add(1) <= ph.maxReqs }
	}
	var wg sync.WaitGroup
	for _, w := range workers {
		wg.Go(func() { w.run(ctx, do, deadline, take, &done, &failed) })
	}
	wg.Wait()
	elapsed := time.Since(start)
	stopProgress()
	if err := ctx.Err(); err != nil {
		return result{}, fmt.Errorf("%s: %w", ph.label, err)
	}
	r := result{name: t.name, workers: ph.workers, elapsed: elapsed, errs: newTally(), dials: lc.dials.Load() - dials0}
	for _, w := range workers {
		r.lat = append(r.lat, w.lat...)
		r.errs.addAll(w.errs)
	}
	slices.Sort(r.lat)
	r.ok = len(r.lat)
	return r, nil
}

// run sends joins until the deadline passes, take refuses or ctx ends.
func (w *worker) run(ctx context.Context, do request, deadline time.Time, take func() bool, done, failed *atomic.Int64) {
	for n := 0; ctx.Err() == nil && time.Now().Before(deadline) && take(); n++ {
		start := time.Now()
		class, sample := do(ctx, w, n)
		lat := time.Since(start)
		if class == "" {
			w.lat = append(w.lat, lat)
			done.Add(1)
			continue
		}
		failed.Add(1)
		w.errs.add(class, sample)
	}
}

// join sends one join as user. It returns "" for a 202, else an error class
// and an example.
func join(ctx context.Context, c *http.Client, url, user string) (class, sample string) {
	return send(ctx, c, http.MethodPost, url, http.StatusAccepted, "X-User-Id", user)
}

// send sends one request with the headers (name, value, name, value, …) and reads the whole
// answer, so the connection is reused. It returns "" when the status is
// want, else an error class and an example (the redirect's Location, if
// any, and the start of the body).
func send(ctx context.Context, c *http.Client, method, url string, want int, header ...string) (class, sample string) {
	req, err := http.NewRequestWithContext(ctx, method, url, nil)
	if err != nil {
		return "request", err.Error()
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := c.Do(req)
	if err != nil {
		return "transport", err.Error()
	}
	defer resp.Body.Close()
	if resp.StatusCode == want {
		_, _ = io.Copy(io.Discard, resp.Body)
		return "", ""
	}
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 300))
	_, _ = io.Copy(io.Discard, resp.Body)
	return "status " + strconv.Itoa(resp.StatusCode), strings.TrimSpace(resp.Header.Get("Location") + " " + string(body))
}

// printRows prints a row of a table (head: "joins  ") for each measured
// target of rs.
func printRows(w io.Writer, head string, rs ...*result) {
	for _, r := range rs {
		fmt.Fprintf(w, "%s%-12s  %d clients  %4.1fs  %7.0f req/s  p50 %s  p99 %s  max %s  ok %d  errors %d  dials %d\n",
			head, r.name, r.workers, r.elapsed.Seconds(), r.rate(),
			report.Millis(r.lat.Percentile(0.50)), report.Millis(r.lat.Percentile(0.99)), report.Millis(r.lat.Percentile(1)), r.ok, r.errs.total(), r.dials)
	}
}

// printErrors lists the failed requests of each of rs by class with one
// example each.
func printErrors(w io.Writer, rs ...*result) {
	for _, r := range rs {
		r.errs.print(w, "errors "+r.name+"  ")
	}
}
