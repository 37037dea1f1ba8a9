package loadgen

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httputil"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/waitq/waitq/internal/app"
	"github.com/waitq/waitq/internal/guard"
	"github.com/waitq/waitq/internal/stack"
	"github.com/waitq/waitq/internal/tools/loadgen/report"
	"github.com/waitq/waitq/pkg/entry"
)

// Fixed settings of "loadgen guard".
const (
	guardEvent = "bench-guard"
	guardPage  = "/product/1" // a protected path
	guardBody  = 2048         // bytes of the origin's page
	// guardWarmup is the unrecorded warm-up before each measurement.
	guardWarmup = time.Second
)

// guardConfig are the settings of "loadgen guard".
type guardConfig struct {
	shown
	concurrency int
	duration    time.Duration
	maxReqs     int64
	originCPU   time.Duration
}

// bind declares the guard flags.
func (c *guardConfig) bind(s *settings) {
	s.intVar(&c.concurrency, "c", 64, 1, maxConcurrency, "admitted clients, each a keep-alive connection with its own entry token")
	s.durMax(&c.duration, "d", 10*time.Second, maxDuration, "duration of each measurement (at most 120s)")
	s.int64Var(&c.maxReqs, "n", 1_000_000, 1, maxRequests, "most requests of each measurement")
	s.durVar(&c.originCPU, "origin-cpu", 0, "0", "1s", "CPU time the origin spends on each page (0: a trivial origin), as a site rendering pages would")
}

// RunGuard measures what waitq-guard costs an admitted visitor: pages/s and
// latency from clients that each hold a valid entry cookie, through the
// guard (guard + reverse proxy) to a trivial origin, next to the same
// clients straight to the origin and through a bare httputil reverse proxy
// (so the guard's own cost shows apart from the extra hop). The origin, a
// stand-in gateway serving the keys of a test keyring, the bare proxy and
// the guard run in this process on loopback.
func RunGuard(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var cfg guardConfig
	if ok, err := begin("guard", &cfg, args, stdout, stderr); !ok {
		return err
	}
	originBase, stopOrigin, err := serve("origin", loopback, originHandler(guardBody, cfg.originCPU))
	if err != nil {
		return err
	}
	defer stopOrigin()
	keys, err := entry.NewKeyring("bench", []byte(stack.RandomHex(16)), nil) // a seed of 32 random hex digits
	if err != nil {
		return err
	}
	gwBase, stopGateway, err := serve("gateway keys", loopback, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write(keys.JWKS())
	}))
	if err != nil {
		return err
	}
	defer stopGateway()
	guardBase, stopGuard, err := startGuard(ctx, map[string]string{
		"WAITQ_ORIGIN_URL": originBase, "WAITQ_EVENT_ID": guardEvent, "WAITQ_GATEWAY_URL": gwBase,
		"WAITQ_WAITING_ROOM_URL": "http://127.0.0.1:9/", // never visited: every client holds a valid token
	}, stderr)
	if err != nil {
		return err
	}
	defer stopGuard()
	proxyBase, stopProxy, err := serve("bare proxy", loopback, bareProxy(originBase))
	if err != nil {
		return err
	}
	defer stopProxy()
	fmt.Fprintf(stdout, "target   waitq-guard in-process (cached cookie check, httputil reverse proxy), a bare httputil reverse proxy and the origin in-process: GET %s, %d-byte page, %s of CPU a page\n", guardPage, guardBody, cfg.originCPU)

	lc := newLoadClient(cfg.concurrency)
	defer lc.Close()
	cookies, err := admitClients(ctx, lc.http, guardBase, keys, cfg.concurrency)
	if err != nil {
		return err
	}
	// The origin alone is measured first, so nothing the guard left behind
	// weighs on it.
	var rs [3]result
	for i, t := range []target{{"origin", originBase + guardPage}, {"bare-proxy", proxyBase + guardPage}, {"through-guard", guardBase + guardPage}} {
		if rs[i], err = measurePages(ctx, lc, cfg, t, cookies, stderr); err != nil {
			return err
		}
	}
	direct, bare, gated := &rs[0], &rs[1], &rs[2]

	fmt.Fprintln(stdout)
	printRows(stdout, "guard   ", gated, bare, direct)
	report.Summary(stdout, fmt.Sprintf("pages through waitq-guard, %d admitted clients, origin %s CPU a page", cfg.concurrency, cfg.originCPU),
		fmt.Sprintf("%.0f/s, p50 %s, p99 %s", gated.rate(), report.Millis(gated.lat.Percentile(0.5)), report.Millis(gated.lat.Percentile(0.99))),
		fmt.Sprintf("origin straight %.0f/s, p50 %s, p99 %s", direct.rate(), report.Millis(direct.lat.Percentile(0.5)), report.Millis(direct.lat.Percentile(0.99))),
		gated.rate(), direct.rate(), "≥ 0.7")
	report.Summary(stdout, "waitq-guard against a bare reverse proxy (the guard's own cost)",
		fmt.Sprintf("%.0f/s", gated.rate()), fmt.Sprintf("httputil.ReverseProxy alone %.0f/s", bare.rate()), gated.rate(), bare.rate(), "")
	printErrors(stdout, gated, bare, direct)
	return nil
}

// originHandler answers every request 200 with a page of size bytes, after
// spinning on the CPU for work.
func originHandler(size int, work time.Duration) http.Handler {
	page := []byte(strings.Repeat("x", size))
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		for start := time.Now(); time.Since(start) < work; {
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Content-Length", strconv.Itoa(len(page)))
		_, _ = w.Write(page)
	})
}

// bareProxy is the baseline of the guard's own cost: net/http/httputil's
// reverse proxy to origin with the guard's transport, and nothing else.
func bareProxy(origin string) http.Handler {
	u, _ := url.Parse(origin) // made by serve
	return &httputil.ReverseProxy{
		Rewrite:   func(pr *httputil.ProxyRequest) { pr.SetURL(u); pr.SetXForwarded() },
		Transport: guard.NewTransport(),
	}
}

// startGuard runs waitq-guard in this process with env over its defaults,
// the cookie without Secure (plain HTTP on loopback), and waits until it is
// ready.
func startGuard(ctx context.Context, env map[string]string, stderr io.Writer) (base string, stop func(), err error) {
	env["WAITQ_COOKIE_INSECURE"] = "true"
	g, err := stack.StartService(ctx, &app.Guard{}, env, stack.ServiceOptions{ReadyPath: guard.AdminPrefix + "readyz"})
	if err != nil {
		return "", nil, err
	}
	return g.URL(), stopper(g, stderr), nil
}

// admitClients signs an entry token for each of n clients and brings each
// in as the waiting room does: GET with waitq_token, answered 302 and the
// cookie. It returns each client's Cookie header.
func admitClients(ctx context.Context, c *http.Client, guardBase string, keys *entry.Keyring, n int) ([]string, error) {
	cookies := make([]string, n)
	noFollow := *c
	noFollow.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	for i := range cookies {
		now := time.Now()
		tok := keys.Sign(entry.Token{EventID: guardEvent, UserID: "bench" + strconv.Itoa(i), Expires: now.Add(time.Hour).UnixMilli(), IssuedAt: now.UnixMilli()})
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, guardBase+guardPage+"?"+entry.TokenParam+"="+tok, nil)
		if err != nil {
			return nil, err
		}
		resp, err := noFollow.Do(req)
		if err != nil {
			return nil, fmt.Errorf("entering client %d: %w", i, err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		set := resp.Cookies()
		k := slices.IndexFunc(set, func(ck *http.Cookie) bool { return ck.Value == tok })
		if resp.StatusCode != http.StatusFound || resp.Header.Get("Location") != guardPage || k < 0 {
			return nil, fmt.Errorf("entering client %d: %s, Location %q, Set-Cookie %q", i, resp.Status, resp.Header.Get("Location"), resp.Header.Values("Set-Cookie"))
		}
		cookies[i] = set[k].Name + "=" + tok
	}
	return cookies, nil
}

// measurePages runs an unrecorded warm-up of guardWarmup and then the
// recorded measurement of GETs of t, worker i sending cookies[i] and
// expecting 200.
func measurePages(ctx context.Context, lc *loadClient, cfg guardConfig, t target, cookies []string, stderr io.Writer) (result, error) {
	get := func(ctx context.Context, w *worker, _ int) (string, string) {
		return send(ctx, lc.http, http.MethodGet, t.url, http.StatusOK, "Cookie", cookies[w.id])
	}
	lc.Close()
	warm, err := measure(ctx, lc, t, phase{label: t.name + " warm-up", duration: guardWarmup, maxReqs: cfg.maxReqs, workers: cfg.concurrency}, get, stderr)
	if err != nil {
		return result{}, err
	}
	if n := warm.errs.total(); n > 0 {
		fmt.Fprintf(stderr, "  %s warm-up: %d errors, e.g. %s\n", t.name, n, warm.errs.first())
	}
	return measure(ctx, lc, t, phase{label: t.name, duration: cfg.duration, maxReqs: cfg.maxReqs, workers: cfg.concurrency}, get, stderr)
}
