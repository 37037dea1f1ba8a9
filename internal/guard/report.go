package guard

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/waitq/waitq/internal/queue"
)

// Defaults of the health reports.
const (
	DefaultHealthInterval = time.Second
	// MaxReportTimeout bounds each report's POST (shorter with a shorter
	// interval).
	MaxReportTimeout = 2 * time.Second
	// ReportLogEvery is how often a report failure that lasts is logged
	// again; the first failure and the recovery are logged at once.
	ReportLogEvery = time.Minute
)

// ReportConfig is where and how often the guard reports the origin's health.
type ReportConfig struct {
	// URL is producer-api's base URL (required by ReportHealth; empty in a
	// Config: no reports): reports go to
	// URL/v1/admin/events/{eventId}/health. WAITQ_HEALTH_URL.
	URL string
	// Token is the Bearer token: the admin token or the event's report
	// token (required with URL), WAITQ_HEALTH_TOKEN. The event's report
	// token is also what the guard reports arrivals with (ws-gateway's
	// POST …/arrivals, with GatewayURL), with or without URL.
	Token string
	// Reporter names this guard among the event's reporters (empty:
	// DefaultReporterName()), WAITQ_HEALTH_REPORTER.
	Reporter string
	// Interval is the time between reports (0: DefaultHealthInterval),
	// WAITQ_HEALTH_INTERVAL.
	Interval time.Duration
}

// withDefaults fills the zero settings of c: DefaultHealthInterval and
// DefaultReporterName().
func (c ReportConfig) withDefaults() ReportConfig {
	c.Interval = cmp.Or(c.Interval, DefaultHealthInterval)
	if c.Reporter == "" {
		c.Reporter = DefaultReporterName()
	}
	return c
}

// Validate reports every setting of c that keeps it from reporting, each
// named by its WAITQ_ variable.
func (c ReportConfig) Validate() error {
	errs := c.check()
	if c.URL == "" {
		errs = append(errs, errors.New("WAITQ_HEALTH_URL is empty: nowhere to report"))
	}
	return errors.Join(errs...)
}

// check reports the settings of c that cannot work; an empty URL (no
// reports) is not one of them.
func (c ReportConfig) check() []error {
	var errs []error
	if c.URL != "" && !httpURL(c.URL) {
		errs = append(errs, fmt.Errorf("WAITQ_HEALTH_URL=%q must be an http(s) URL (producer-api's base URL)", c.URL))
	}
	if c.URL != "" && c.Token == "" {
		errs = append(errs, errors.New("WAITQ_HEALTH_TOKEN is required with WAITQ_HEALTH_URL (the admin token or the event's report token)"))
	}
	if c.Interval <= 0 {
		errs = append(errs, fmt.Errorf("WAITQ_HEALTH_INTERVAL=%s must be positive", c.Interval))
	}
	if c.Reporter != "" && !queue.ValidReporter(c.Reporter) {
		errs = append(errs, fmt.Errorf("WAITQ_HEALTH_REPORTER=%q must be 1 to 64 letters, digits or . _ : -", c.Reporter))
	}
	return errs
}

// Health returns the figures of the origin's answers on guarded paths over
// the health window ending at now (the real clock's time), without a
// reporter name.
func (g *Proxy) Health(now time.Time) queue.HealthReport { return g.health.Snapshot(now) }

// ReportHealth posts the origin's health to producer-api every interval
// until ctx ends. Failures are logged (the first, then once every
// ReportLogEvery while they last, and the recovery) and counted; they never
// stop the loop. It returns an error only for a config it cannot use.
func (g *Proxy) ReportHealth(ctx context.Context, cfg ReportConfig) error {
	cfg = cfg.withDefaults()
	if err := cfg.Validate(); err != nil {
		return fmt.Errorf("guard: health reports: %w", err)
	}
	r := &reporter{
		g: g, cfg: cfg, timeout: min(cfg.Interval, MaxReportTimeout),
		url: strings.TrimRight(cfg.URL, "/") + "/v1/admin/events/" + url.PathEscape(g.eventID) + "/health",
	}
	g.log.Info("reporting the origin's health", "event", g.eventID, "url", r.url, "reporter", cfg.Reporter,
		"interval", cfg.Interval.String(), "window", g.health.Window().String())
	tick := time.NewTicker(cfg.Interval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
		r.report(ctx)
	}
}

// reporter sends the reports of one ReportHealth loop and keeps what its
// logs need.
type reporter struct {
	g       *Proxy
	cfg     ReportConfig
	url     string
	timeout time.Duration

	failing  bool            // the last report did not get through
	since    time.Time       // the first failure of the run
	failures int             // … and how many since
	logged   time.Time       // the last failure logged
	kinds    map[string]bool // the kinds of failure logged in the run
}

// report takes a snapshot, posts it and counts and logs the outcome.
func (r *reporter) report(ctx context.Context) {
	now := time.Now()
	snap := r.g.Health(now)
	snap.Reporter = r.cfg.Reporter
	p95, errRate := 0.0, 0.0
	if snap.P95Ms != nil {
		p95, errRate = *snap.P95Ms/1000, *snap.ErrorRate
	}
	r.g.m.healthP95.Set(p95)
	r.g.m.healthErr.Set(errRate)

	result, kind, msg, attrs := r.post(ctx, &snap)
	if ctx.Err() != nil {
		return // stopping: the last report was cut short, nothing to tell
	}
	r.g.m.reports[result].Inc()
	if result == reportOK {
		if r.failing {
			r.g.log.Info("health reports get through again", "event", r.g.eventID, "url", r.url,
				"failures", r.failures, "failing_for", now.Sub(r.since).Round(time.Second).String())
		}
		r.failing, r.failures, r.kinds = false, 0, nil
		return
	}
	if !r.failing {
		r.failing, r.since, r.kinds = true, now, map[string]bool{}
	}
	r.failures++
	// Each kind of failure is logged when it first shows in the run; the
	// run is logged again once every ReportLogEvery.
	if r.kinds[kind] && now.Sub(r.logged) < ReportLogEvery {
		return
	}
	r.logged, r.kinds[kind] = now, true
	level := slog.LevelWarn
	if result == reportRejected {
		level = slog.LevelError
	}
	attrs = append(attrs, "event", r.g.eventID, "url", r.url, "failures", r.failures,
		"failing_for", now.Sub(r.since).Round(time.Second).String())
	r.g.log.Log(ctx, level, msg, attrs...)
}

// post sends one report. It returns the result, a kind of failure (each
// kind is logged once in a run of failures, and the run once every
// ReportLogEvery), a message and attributes for the log.
func (r *reporter) post(ctx context.Context, snap *queue.HealthReport) (result reportResult, kind, msg string, attrs []any) {
	body, err := json.Marshal(snap)
	if err != nil {
		return reportFailed, "encode", "encoding the health report failed", []any{"err", err}
	}
	ctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, r.url, bytes.NewReader(body))
	if err != nil {
		return reportFailed, "request", "the health report could not be made", []any{"err", err}
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+r.cfg.Token)
	resp, err := r.g.client.Do(req)
	if err != nil {
		return reportFailed, "unreachable", "the health report did not reach producer-api", []any{"err", err}
	}
	defer resp.Body.Close()
	code, text := apiError(resp.Body)
	st := resp.StatusCode
	attrs = []any{"status", st}
	if code != "" {
		attrs = append(attrs, "code", code, "message", text)
	}
	kind = strconv.Itoa(st)
	switch {
	case st >= 200 && st < 300:
		return reportOK, "", "", nil
	case st == http.StatusUnauthorized || st == http.StatusForbidden:
		return reportRejected, kind, fmt.Sprintf("the health token is not valid for event %s (use the admin token or the event's report token)", r.g.eventID), attrs
	case st == http.StatusNotFound:
		return reportRejected, kind, fmt.Sprintf("producer-api knows no event %s (or no health route at that URL)", r.g.eventID), attrs
	case st >= 400 && st < 500:
		return reportRejected, kind, "producer-api refused the health report", attrs
	default:
		return reportFailed, kind, "producer-api did not take the health report", attrs
	}
}

// apiError reads the code and message of producer-api's error body
// ({"error":{"code":…,"message":…}}), "" when there is none, and drains
// the body so that the connection is reused.
func apiError(body io.Reader) (code, message string) {
	var e struct {
		Error struct{ Code, Message string }
	}
	b, _ := io.ReadAll(io.LimitReader(body, 4096))
	_, _ = io.Copy(io.Discard, io.LimitReader(body, 64<<10))
	if json.Unmarshal(b, &e) != nil {
		return "", ""
	}
	return e.Error.Code, e.Error.Message
}

// DefaultReporterName returns this process's name among an event's
// reporters: the host name and the process id, in the characters a
// reporter name may hold.
func DefaultReporterName() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "waitq-guard"
	}
	return SanitizeReporter(host + "-" + strconv.Itoa(os.Getpid()))
}

// SanitizeReporter returns s as a valid reporter name: every character
// other than letters, digits and . _ : - becomes -, and it keeps its last
// 64 characters (the process id, when it ends in one).
func SanitizeReporter(s string) string {
	b := []byte(s)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("._:-", c) >= 0) {
			b[i] = '-'
		}
	}
	if len(b) > 64 {
		b = b[len(b)-64:]
	}
	if len(b) == 0 {
		return "waitq-guard"
	}
	return string(b)
}
