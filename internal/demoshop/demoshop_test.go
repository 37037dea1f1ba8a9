package demoshop_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/waitq/waitq/internal/demoshop"
)

func TestShopPages(t *testing.T) {
	for name, h := range map[string]http.Handler{
		"no limit":  demoshop.Handler(),
		"a worker":  newShop(t, demoshop.Config{Workers: 1, WorkTime: time.Millisecond}),
		"a timeout": newShop(t, demoshop.Config{QueueTimeout: time.Minute}),
	} {
		t.Run(name, func(t *testing.T) { testPages(t, h) })
	}
}

// newShop returns the shop of cfg, failing the test when cfg is refused.
func newShop(tb testing.TB, cfg demoshop.Config) *demoshop.Shop {
	tb.Helper()
	s, err := demoshop.New(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	return s
}

// TestNewRefusesABadConfig: New validates, as every constructor does.
func TestNewRefusesABadConfig(t *testing.T) {
	if _, err := demoshop.New(demoshop.Config{Workers: -1}); err == nil || !strings.Contains(err.Error(), "WAITQ_SHOP_WORKERS") {
		t.Fatalf("New with -1 workers: %v, want an error naming WAITQ_SHOP_WORKERS", err)
	}
}

func testPages(t *testing.T, h http.Handler) {
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	get := func(method, path string, form url.Values, user string) (int, string, string) {
		t.Helper()
		req, _ := http.NewRequest(method, srv.URL+path, strings.NewReader(form.Encode()))
		if form != nil {
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		}
		if user != "" {
			req.Header.Set(demoshop.UserHeader, user)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, resp.Header.Get("Content-Type"), string(b)
	}
	tests := []struct {
		name, method, path string
		form               url.Values
		user               string
		status             int
		contains           []string
	}{
		{"home lists every product", "GET", "/", nil, "", 200, []string{"<h1>Today's drop</h1>", `href="/product/1"`, `href="/product/3"`, "Tour T-shirt"}},
		{"product page has an order form", "GET", "/product/2", nil, "", 200, []string{"Concert ticket, seated", "€79", `action="/order"`, `value="2"`}},
		{"unknown product", "GET", "/product/9", nil, "", 404, []string{"Not found"}},
		{"unknown page", "GET", "/checkout", nil, "", 404, []string{"Not found"}},
		{"order by POST", "POST", "/order", url.Values{"product": {"1"}}, "alice", 200, []string{"Order placed", "Thank you, alice.", "Concert ticket, standing"}},
		{"order by GET", "GET", "/order", nil, "", 200, []string{"Order placed", "Thank you."}},
		{"the user the guard names, escaped", "GET", "/", nil, "<b>bob</b>", 200, []string{"as &lt;b&gt;bob&lt;/b&gt;"}},
		{"stylesheet", "GET", "/static/shop.css", nil, "", 200, []string{"font-family"}},
		{"health", "GET", "/healthz", nil, "", 200, []string{"ok"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			status, ctype, body := get(tc.method, tc.path, tc.form, tc.user)
			if status != tc.status {
				t.Fatalf("status %d, want %d:\n%s", status, tc.status, body)
			}
			if !strings.HasSuffix(tc.path, ".css") && tc.path != "/healthz" && ctype != "text/html; charset=utf-8" {
				t.Errorf("Content-Type %q", ctype)
			}
			for _, s := range tc.contains {
				if !strings.Contains(body, s) {
					t.Errorf("page lacks %q:\n%s", s, body)
				}
			}
		})
	}
}
