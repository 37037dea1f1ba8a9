package loadgen

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/cookiejar"
	"strconv"
	"strings"
	"time"

	"github.com/waitq/waitq/internal/clock"
	"github.com/waitq/waitq/internal/demoshop"
)

// visitor is one person: joins, waits on the WebSocket for the admitted
// frame, follows its redirectUrl into the guard (which trades the token for
// its cookie), then asks for the shop's home page, a product and the order,
// thinking between them. A page that fails is asked for once more after a
// second; failing again, the visitor gives up. Once ctx ends it stops where
// it is.
func (r *adaptiveRun) visitor(ctx context.Context, cfg adaptiveConfig, s *adaptiveStack, joins *http.Client, visits http.RoundTripper, i int) {
	j, err := joinAs(ctx, joins, s.producer, s.event, fmt.Sprintf("v%05d", i))
	if err != nil {
		r.fail(ctx, "join", err)
		return
	}
	r.mark(&r.joined)
	f, closeWS, err := awaitAdmitted(ctx, s.gateways[0], j.StatusURL)
	if err != nil {
		r.fail(ctx, "admitted frame", err)
		return
	}
	go closeWS() // the handshake need not hold the visitor up
	r.mark(&r.admitted)
	if f.RedirectURL == "" {
		r.fail(ctx, "admitted frame", errors.New("no redirectUrl"))
		return
	}
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Transport: visits, Jar: jar, Timeout: pageTimeout,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	status, loc, err := fetch(ctx, c, http.MethodGet, f.RedirectURL, "")
	ok := err == nil && status == http.StatusFound
	if !ok {
		r.fail(ctx, "entering through the guard", fmt.Errorf("%d %s %v", status, loc, err))
	}
	product := strconv.Itoa(demoshop.Products[i%len(demoshop.Products)].ID)
	for k, st := range []struct{ method, path, form string }{
		{http.MethodGet, "/", ""},
		{http.MethodGet, "/product/" + product, ""},
		{http.MethodPost, "/order", "product=" + product},
	} { // once one fails, the rest are not asked for
		ok = ok && (k == 0 || cfg.think == 0 || clock.SleepUntil(ctx, time.Now().Add(cfg.think/2+rand.N(cfg.think)))) &&
			r.page(ctx, c, st.method, s.guard+st.path, st.form)
	}
	switch {
	case ok:
		r.mark(&r.ordered)
	case ctx.Err() == nil:
		r.mark(&r.gaveUp)
	}
}

// page asks for one page, once more after retryAfter when it fails, and
// records each answer; it reports whether the page came.
func (r *adaptiveRun) page(ctx context.Context, c *http.Client, method, url, form string) bool {
	for attempt := range 2 {
		if attempt > 0 && !clock.SleepUntil(ctx, time.Now().Add(retryAfter)) {
			return false
		}
		t0 := time.Now()
		status, loc, err := fetch(ctx, c, method, url, form)
		if ctx.Err() != nil {
			return false // the run is over: not an answer of the shop
		}
		rec := pageRecord{end: r.since(), took: time.Since(t0), failed: err != nil || status != http.StatusOK}
		r.mu.Lock()
		r.pages = append(r.pages, rec)
		switch {
		case err != nil:
			r.failures.add("page: transport", err.Error())
		case status == http.StatusFound:
			r.failures.add("page: sent to the line", loc)
		case status != http.StatusOK:
			r.failures.add("page: status "+strconv.Itoa(status), method+" "+url)
		}
		r.mu.Unlock()
		if !rec.failed {
			return true
		}
	}
	return false
}

// fetch sends one request with form as its body (none when empty) and
// reads the whole answer; it returns the status and the Location header.
func fetch(ctx context.Context, c *http.Client, method, url, form string) (int, string, error) {
	req, err := http.NewRequestWithContext(ctx, method, url, strings.NewReader(form))
	if err != nil {
		return 0, "", err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := c.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	_, err = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, resp.Header.Get("Location"), err
}
