package monitoring

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/waitq/waitq/internal/app"
	"github.com/waitq/waitq/internal/stack"
	"github.com/waitq/waitq/internal/testkit/testclient"
	"github.com/waitq/waitq/internal/testkit/testenv"
	"github.com/waitq/waitq/pkg/entry"
)

const (
	rulesDir  = "../../deploy/prometheus"
	dashboard = "../../deploy/grafana/waitq.json"
)

// tool returns the path of a Prometheus program (Debian's prometheus
// package), failing in CI and skipping elsewhere when it is missing.
func tool(t *testing.T, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		testenv.Unavailable(t, "%s not on PATH (apt-get install prometheus)", name)
	}
	return p
}

// TestRulesCheckAndUnitTests runs promtool check rules and promtool test
// rules (an alert firing and not firing per test) on deploy/prometheus.
func TestRulesCheckAndUnitTests(t *testing.T) {
	promtool := tool(t, "promtool")
	tests, _ := filepath.Glob(filepath.Join(rulesDir, "tests", "*.yml"))
	if len(tests) == 0 {
		t.Fatal("no rule unit tests in deploy/prometheus/tests")
	}
	for _, args := range [][]string{
		{"check", "rules", filepath.Join(rulesDir, "waitq-rules.yml")},
		append([]string{"test", "rules"}, tests...),
	} {
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		out, err := exec.CommandContext(ctx, promtool, args...).CombinedOutput()
		cancel()
		if err != nil {
			t.Fatalf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	// Every alert has a unit test.
	rules, _ := os.ReadFile(filepath.Join(rulesDir, "waitq-rules.yml"))
	var unit strings.Builder
	for _, f := range tests {
		b, _ := os.ReadFile(f)
		unit.Write(b)
	}
	for _, line := range strings.Split(string(rules), "\n") {
		if name, ok := strings.CutPrefix(strings.TrimSpace(line), "- alert: "); ok && !strings.Contains(unit.String(), "alertname: "+name+"\n") {
			t.Errorf("alert %s has no unit test", name)
		}
	}
}

// mayBeEmpty names the dashboard expressions that cannot have data in this
// test, each with the reason; an expression named here is still queried
// (it must parse and evaluate). Empty: driveTraffic gives every panel its
// data.
var mayBeEmpty = map[string]string{}

// TestDashboardQueriesAgainstADevstack starts a devstack in process, joins
// the demo event, has a real Prometheus scrape every service with the
// recording rules loaded, and queries every expression of every panel of
// the dashboard: none may fail, and each returns series unless it is one of
// mayBeEmpty. driveTraffic gives the panels that need traffic theirs.
func TestDashboardQueriesAgainstADevstack(t *testing.T) {
	prom := tool(t, "prometheus")
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()

	producer, gateway, ingest, shop := testenv.FreeAddr(t), testenv.FreeAddr(t), testenv.FreeAddr(t), testenv.FreeAddr(t)
	env := map[string]string{
		"WAITQ_PRODUCER_ADDR": producer, "WAITQ_GATEWAY_ADDR": gateway, "WAITQ_INGEST_ADDR": ingest, "WAITQ_SHOP_ADDR": shop,
		"WAITQ_ADMIN_TOKEN": "monitoring-test-token", "WAITQ_TICKET_SECRET": ticketSecret,
	}
	devCtx, stopDev := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- app.RunWithEnv(devCtx, &stack.Devstack{}, env, testenv.Logger(t)) }()
	t.Cleanup(func() {
		stopDev()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("devstack stopped with %v", err)
			}
		case <-time.After(30 * time.Second):
			t.Error("devstack did not stop within 30 s")
		}
	})
	testenv.Eventually(t, 60*time.Second, func() (bool, string) {
		body, err := get("http://" + producer + "/metrics")
		return err == nil && strings.Contains(body, `waitq_event_capacity{event="shop"}`), fmt.Sprint("producer-api metrics without the shop event: ", err)
	})
	// A visitor joins the demo event, as the waiting-room page does.
	v := testclient.NewVisitor("http://" + producer)
	if _, _, err := v.Identify(ctx); err != nil {
		t.Fatalf("visitor identity: %v", err)
	}
	if _, refused, err := v.Join(ctx, "demo"); err != nil || refused != nil {
		t.Fatalf("join the demo event: %+v %v", refused, err)
	}
	driveTraffic(t, ctx, gateway, shop)

	// A real Prometheus, scraping every second.
	dir := t.TempDir()
	rules, _ := filepath.Abs(filepath.Join(rulesDir, "waitq-rules.yml"))
	cfg := fmt.Sprintf(`global: {scrape_interval: 1s, evaluation_interval: 1s}
rule_files: [%q]
scrape_configs:
  - {job_name: producer-api, static_configs: [{targets: [%q]}]}
  - {job_name: ws-gateway, static_configs: [{targets: [%q]}]}
  - {job_name: ingest-consumer, static_configs: [{targets: [%q]}]}
  - {job_name: waitq-guard, metrics_path: /waitq-guard/metrics, static_configs: [{targets: [%q]}]}
`, rules, producer, gateway, ingest, shop)
	if err := os.WriteFile(filepath.Join(dir, "prometheus.yml"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	promAddr := testenv.FreeAddr(t)
	cmd := exec.CommandContext(ctx, prom, "--config.file="+filepath.Join(dir, "prometheus.yml"),
		"--storage.tsdb.path="+filepath.Join(dir, "data"), "--web.listen-address="+promAddr)
	logs := &testenv.Buffer{}
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("prometheus:\n%s", logs.String())
		}
	})
	api := "http://" + promAddr + "/api/v1/"

	testenv.Eventually(t, 60*time.Second, func() (bool, string) {
		var r struct {
			Data struct {
				ActiveTargets []struct {
					ScrapePool, Health, LastError string
				}
			}
		}
		if err := getJSON(api+"targets", &r); err != nil {
			return false, err.Error()
		}
		up := 0
		for _, tg := range r.Data.ActiveTargets {
			if tg.Health == "up" {
				up++
			}
		}
		return up == 4, fmt.Sprintf("targets %+v", r.Data.ActiveTargets)
	})

	var d struct {
		SchemaVersion int
		Templating    struct{ List []struct{ Name, Type string } }
		Panels        []struct {
			Title   string
			Targets []struct{ Expr string }
		}
	}
	raw, err := os.ReadFile(dashboard)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &d); err != nil {
		t.Fatalf("dashboard: %v", err)
	}
	if d.SchemaVersion < 38 || len(d.Panels) == 0 {
		t.Fatalf("dashboard: schemaVersion %d, %d panels", d.SchemaVersion, len(d.Panels))
	}
	vars := map[string]string{}
	for _, v := range d.Templating.List {
		vars[v.Type+":"+v.Name] = v.Name
	}
	if vars["datasource:datasource"] == "" || vars["query:event"] == "" {
		t.Errorf("dashboard variables %v: want a datasource variable and an event variable", vars)
	}
	n := 0
	for _, p := range d.Panels {
		for _, tg := range p.Targets {
			expr := strings.ReplaceAll(tg.Expr, "$event", ".*")
			_, empty := mayBeEmpty[tg.Expr]
			n++
			testenv.Eventually(t, 90*time.Second, func() (bool, string) {
				var r struct {
					Status, Error string
					Data          struct{ Result []json.RawMessage }
				}
				err := getJSON(api+"query?query="+url.QueryEscape(expr), &r)
				if err == nil && r.Status != "success" {
					t.Fatalf("panel %q: %s: %s", p.Title, expr, r.Error)
				}
				return err == nil && (empty || len(r.Data.Result) > 0), fmt.Sprintf("panel %q: %s: %v, %d series", p.Title, expr, err, len(r.Data.Result))
			})
		}
	}
	t.Logf("%d panels, %d expressions queried", len(d.Panels), n)
}

// ticketSecret is the devstack's ticket secret, from which its gateway
// derives the entry-token key (no WAITQ_ENTRY_KEY): the test signs the shop
// event's entry tokens with it, as if the waiting room had admitted.
const ticketSecret = "monitoring-test-ticket-secret-0123456789abcdef"

// driveTraffic gives the panels that a quiet devstack leaves empty their
// data, until the test ends: a socket refused by ws-gateway (a GET without
// the upgrade: reason handshake), entry tokens refused by the shop's
// waitq-guard (none, a forged one), and an admitted visitor's pages through
// it, so that the origin's latency histogram fills and the guard's health
// reports carry a p95 (producer-api's waitq_event_health_p95_seconds; the
// guard reports every second over 10 s, hence the steady trickle).
func driveTraffic(t *testing.T, ctx context.Context, gateway, shop string) {
	t.Helper()
	keys, err := entry.DerivedKeyring(ticketSecret, nil)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	tok := keys.Sign(entry.Token{EventID: "shop", UserID: "monitor", IssuedAt: now.UnixMilli(), Expires: now.Add(time.Hour).UnixMilli()})
	client := &http.Client{Timeout: 5 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	do := func(u, cookie string) (int, error) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
		if cookie != "" {
			req.Header.Set("Cookie", "waitq_entry_shop="+cookie)
		}
		resp, err := client.Do(req)
		if err != nil {
			return 0, err
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode, nil
	}
	round := func() error {
		for _, c := range []struct {
			url, cookie string
			want        int
		}{
			{"http://" + gateway + "/queue-status/demo", "", http.StatusUpgradeRequired},
			{"http://" + shop + "/", "", http.StatusFound},
			{"http://" + shop + "/", tok[:len(tok)-4] + "AAAA", http.StatusFound},
			{"http://" + shop + "/", tok, http.StatusOK},
		} {
			if code, err := do(c.url, c.cookie); err != nil || code != c.want {
				return fmt.Errorf("GET %s: %d %v, want %d", c.url, code, err, c.want)
			}
		}
		return nil
	}
	if err := round(); err != nil {
		t.Fatal(err)
	}
	go func() {
		tick := time.NewTicker(250 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				_ = round()
			}
		}
	}()
}

func get(u string) (string, error) {
	resp, err := (&http.Client{Timeout: 5 * time.Second}).Get(u)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	var b strings.Builder
	_, err = io.Copy(&b, resp.Body)
	if err == nil && resp.StatusCode != http.StatusOK {
		err = fmt.Errorf("GET %s: %s", u, resp.Status)
	}
	return b.String(), err
}

func getJSON(u string, v any) error {
	body, err := get(u)
	if err != nil && body == "" {
		return err
	}
	return json.Unmarshal([]byte(body), v)
}
