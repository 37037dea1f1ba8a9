package web_test

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	cdpruntime "github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"github.com/labstack/echo/v4"

	"github.com/waitq/waitq/internal/challenge"
	"github.com/waitq/waitq/internal/queue"
	"github.com/waitq/waitq/internal/web"
)

// powPage serves the static directory as the gateway does, and an empty
// page at /pow.html for the worker to start from (a worker needs an origin).
func powPage(t *testing.T) string {
	t.Helper()
	e := echo.New()
	web.Register(e, web.Config{})
	e.GET("/pow.html", func(c echo.Context) error {
		return c.HTML(http.StatusOK, "<!doctype html><title>pow</title>")
	})
	site := httptest.NewServer(e)
	t.Cleanup(site.Close)
	return site.URL + "/pow.html"
}

// powRun is what the page hands back for one challenge: the worker's last
// message, and how many progress messages came before it.
type powRun struct {
	Type     string  `json:"type"`
	Solution string  `json:"solution"`
	Tried    float64 `json:"tried"`
	Expected float64 `json:"expected"`
	Ms       float64 `json:"ms"`
	Message  string  `json:"message"`
	Progress int     `json:"progress"`
}

// powScript runs the worker once per challenge, one after the other, each
// in a fresh worker, and resolves to their powRuns. With stopAtProgress
// the worker is stopped at its first progress message, which is then the
// result. Once budgetMs has passed no run starts, and the one running is
// stopped: its result is {type: "cut"} with the tries of its last progress.
const powScript = `(async (challenges, stopAtProgress, budgetMs) => {
  const start = performance.now(), out = [];
  const one = (challenge) => new Promise((resolve) => {
    const w = new Worker("/static/pow-worker.js");
    const t0 = performance.now();
    let progress = 0, tried = 0;
    const cut = setTimeout(() => {
      w.terminate();
      resolve({type: "cut", tried, ms: performance.now() - t0, progress});
    }, Math.max(0, budgetMs - (t0 - start)));
    w.onmessage = ({data}) => {
      if (data.type === "progress") {
        progress++;
        tried = data.tried;
        if (!stopAtProgress) return;
      }
      clearTimeout(cut);
      w.terminate();
      resolve({...data, progress});
    };
    w.onerror = (e) => { w.terminate(); resolve({type: "onerror", message: String(e.message)}); };
    w.postMessage({challenge});
  });
  for (const c of challenges) {
    if (performance.now() - start > budgetMs) break;
    out.push(await one(c));
  }
  return out;
})(%s, %v, %d)`

// solveInBrowser runs challenges through pow-worker.js in the page at url.
func solveInBrowser(ctx context.Context, url string, challenges []string, stopAtProgress bool, budget time.Duration) ([]powRun, error) {
	list := "[" + strings.Join(mapSlice(challenges, strconv.Quote), ",") + "]"
	var out []powRun
	err := chromedp.Run(ctx,
		chromedp.Navigate(url),
		chromedp.Evaluate(fmt.Sprintf(powScript, list, stopAtProgress, budget.Milliseconds()), &out,
			func(p *cdpruntime.EvaluateParams) *cdpruntime.EvaluateParams { return p.WithAwaitPromise(true) }),
	)
	return out, err
}

func mapSlice[T, U any](s []T, f func(T) U) []U {
	out := make([]U, len(s))
	for i, v := range s {
		out[i] = f(v)
	}
	return out
}

// powIssuer is an issuer with a fixed test key.
func powIssuer(t *testing.T) *challenge.Issuer {
	t.Helper()
	iss, err := challenge.NewIssuer([][]byte{[]byte("pow-browser-test-key-0123456789abcdef")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return iss
}

// TestProofOfWorkInARealBrowser runs pow-worker.js in chromium on
// challenges a Go Issuer made and checks that Verify takes the browser's
// solutions (the same nonces Go's Solve finds), that the worker reports
// progress against the expected work, and that it says what is wrong with
// a malformed challenge.
func TestProofOfWorkInARealBrowser(t *testing.T) {
	chrome := chromium(t)
	url := powPage(t)
	ctx := browser(t, chrome)
	iss := powIssuer(t)

	var tokens []string
	difficulties := []int{8, 12}
	for _, d := range difficulties {
		c, err := iss.Issue("pow-event", "browser-user", d, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		tokens = append(tokens, c.Token)
	}
	runs, err := solveInBrowser(ctx, url, tokens, false, time.Minute)
	if err != nil || len(runs) != len(tokens) {
		t.Fatalf("worker: %+v, %v", runs, err)
	}
	for i, r := range runs {
		if r.Type != "solved" {
			t.Fatalf("%d bits: %+v", difficulties[i], r)
		}
		if _, err := iss.Verify(tokens[i], r.Solution, "pow-event", "browser-user", difficulties[i]); err != nil {
			t.Fatalf("%d bits: Verify refused the browser's %q: %v", difficulties[i], r.Solution, err)
		}
		goSol, err := challenge.Solve(context.Background(), tokens[i], nil)
		if err != nil || goSol != r.Solution || r.Tried != float64(mustAtoi(t, goSol)+1) {
			t.Fatalf("%d bits: the browser found %q after %v tries, Go %q (%v)", difficulties[i], r.Solution, r.Tried, goSol, err)
		}
		t.Logf("%d bits: nonce %s after %v tries in %v ms", difficulties[i], r.Solution, r.Tried, r.Ms)
	}

	// A hard challenge reports progress before it is solved, unless a nonce
	// happens to solve it first (about 1 in 1,000 at 18 bits): then
	// another challenge, at most three.
	for range 3 {
		hard, ierr := iss.Issue("pow-event", "browser-user", queue.MaxChallengeDifficulty, time.Minute)
		if ierr != nil {
			t.Fatal(ierr)
		}
		runs, err = solveInBrowser(ctx, url, []string{hard.Token}, true, time.Minute)
		if err != nil || len(runs) != 1 || runs[0].Type != "solved" {
			break
		}
		t.Logf("a lucky nonce solved the hard challenge first: %+v", runs[0])
	}
	if err != nil || len(runs) != 1 || runs[0].Type != "progress" || runs[0].Tried <= 0 || runs[0].Expected != 1<<queue.MaxChallengeDifficulty {
		t.Fatalf("progress: %+v, %v", runs, err)
	}

	bad := []string{"", "c1.AAAA.AAAAAAAAAAAAAAAAAAAAAA", "c2" + tokens[0][2:], tokens[0] + "A", "c1.!!!!." + tokens[0][len(tokens[0])-22:]}
	runs, err = solveInBrowser(ctx, url, bad, false, time.Minute)
	if err != nil || len(runs) != len(bad) {
		t.Fatalf("malformed: %+v, %v", runs, err)
	}
	for i, r := range runs {
		if r.Type != "error" || !strings.Contains(r.Message, "malformed") {
			t.Errorf("challenge %q: %+v, want a malformed error", bad[i], r)
		}
	}
}

func mustAtoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestProofOfWorkSolveTimes is the measurement behind
// queue.MaxChallengeDifficulty, run by scripts/bench-pow.sh: with
// WAITQ_POW_BENCH set to a file, it solves WAITQ_POW_BENCH_N (10)
// challenges at each difficulty in chromium's worker and in Go's Solve, each
// side at most WAITQ_POW_BENCH_BUDGET (40s) per difficulty, and writes a
// markdown table of the times there.
func TestProofOfWorkSolveTimes(t *testing.T) {
	out := os.Getenv("WAITQ_POW_BENCH")
	if out == "" {
		t.Skip("a measurement: set WAITQ_POW_BENCH to the markdown file to write (scripts/bench-pow.sh)")
	}
	n := 10
	if s := os.Getenv("WAITQ_POW_BENCH_N"); s != "" {
		n = mustAtoi(t, s)
	}
	budget := 40 * time.Second
	if s := os.Getenv("WAITQ_POW_BENCH_BUDGET"); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil {
			t.Fatal(err)
		}
		budget = d
	}
	chrome := chromium(t)
	url := powPage(t)
	iss := powIssuer(t)

	var b strings.Builder
	version, _ := exec.Command(chrome, "--version").Output()
	fmt.Fprintf(&b, "# Proof-of-work solve times\n\n")
	fmt.Fprintf(&b, "Measured %s by `scripts/bench-pow.sh` (TestProofOfWorkSolveTimes in internal/web): "+
		"up to %d challenges per difficulty, at most %v per side and difficulty, solved one after the other "+
		"in a fresh Web Worker of headless %s (internal/web/static/pow-worker.js, SubtleCrypto, 512 digests per batch) "+
		"and by Go's challenge.Solve (one goroutine), on %d CPUs of %s (GOMAXPROCS %d). "+
		"The number of tries is geometric: its mean is 2^bits and its p95 three times that, so with this few samples "+
		"the p95 is the slowest run and the medians wander; hashes/s (all tries over all time, cut runs included) is the steady figure.\n\n",
		time.Now().UTC().Format("2006-01-02"), n, budget, strings.TrimSpace(string(version)), runtime.NumCPU(), cpuModel(), runtime.GOMAXPROCS(0))
	b.WriteString("| bits | expected hashes | chromium runs | chromium median | chromium p95 | chromium hashes/s | Go runs | Go median | Go p95 | Go hashes/s |\n")
	b.WriteString("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for bits := 10; bits <= queue.MaxChallengeDifficulty; bits += 2 {
		tokens := make([]string, n)
		for i := range tokens {
			c, err := iss.Issue("pow-bench", "bench-user", bits, time.Hour)
			if err != nil {
				t.Fatal(err)
			}
			tokens[i] = c.Token
		}
		ctx := browser(t, chrome) // a fresh browser: each has a minute
		runs, err := solveInBrowser(ctx, url, tokens, false, budget)
		if err != nil {
			t.Fatalf("%d bits in chromium: %v", bits, err)
		}
		var bms []float64
		var btried, btotal float64
		cut := ""
		for _, r := range runs {
			switch r.Type {
			case "solved":
				bms = append(bms, r.Ms)
			case "cut":
				cut = fmt.Sprintf(" (+1 cut at %s)", ms(r.Ms))
			default:
				t.Fatalf("%d bits in chromium: %+v", bits, r)
			}
			btried += r.Tried
			btotal += r.Ms
		}

		var gms []float64
		var gtried float64
		start := time.Now()
		for _, tok := range tokens {
			if time.Since(start) > budget {
				break
			}
			t0 := time.Now()
			sol, err := challenge.Solve(context.Background(), tok, nil)
			if err != nil {
				t.Fatal(err)
			}
			gms = append(gms, float64(time.Since(t0).Microseconds())/1000)
			gtried += float64(mustAtoi(t, sol) + 1)
		}
		gtotal := float64(time.Since(start).Microseconds()) / 1000
		line := fmt.Sprintf("| %d | %d | %d%s | %s | %s | %s | %d | %s | %s | %s |\n", bits, 1<<bits,
			len(bms), cut, ms(median(bms)), ms(p95(bms)), rate(btried, btotal),
			len(gms), ms(median(gms)), ms(p95(gms)), rate(gtried, gtotal))
		t.Log(strings.TrimSpace(line))
		b.WriteString(line)
	}
	if err := os.WriteFile(out, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("wrote %s", out)
}

// median and p95 (nearest rank) of xs; NaN when empty.
func median(xs []float64) float64 { return quantile(xs, 0.5) }
func p95(xs []float64) float64    { return quantile(xs, 0.95) }

func quantile(xs []float64, q float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[int(math.Ceil(q*float64(len(s))))-1]
}

func ms(x float64) string {
	switch {
	case math.IsNaN(x):
		return "–"
	case x >= 1000:
		return fmt.Sprintf("%.2f s", x/1000)
	}
	return fmt.Sprintf("%.1f ms", x)
}

func rate(tried, totalMs float64) string {
	if totalMs <= 0 {
		return "–"
	}
	return fmt.Sprintf("%.0f k", tried/totalMs) // tries per ms = thousands per second
}

// cpuModel is the first "model name" of /proc/cpuinfo, or "an unknown CPU".
func cpuModel() string {
	b, _ := os.ReadFile("/proc/cpuinfo")
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return "an unknown CPU"
}
