package demoshop_test

import (
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/waitq/waitq/internal/b64"
	"github.com/waitq/waitq/internal/demoshop"
	"github.com/waitq/waitq/internal/queue"
)

var presaleSecret = []byte("demo-presale-secret-of-32-bytes!")

func presaleConfig() demoshop.JoinTokenConfig {
	return demoshop.JoinTokenConfig{KeyID: "demo-1", Secret: presaleSecret, RoomURL: "http://127.0.0.1:8081/?lang=en", EventID: "members", ShopURL: "http://127.0.0.1:8084/"}
}

// client is a browser of srv: cookies kept, redirects not followed.
func client(t *testing.T) *http.Client {
	t.Helper()
	jar, _ := cookiejar.New(nil)
	return &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

func do(t *testing.T, c *http.Client, method, u string, form url.Values) (*http.Response, string) {
	t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, _ := http.NewRequest(method, u, body)
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

// TestMembersPresale: a demo customer signs in, follows the presale link
// and lands on the waiting room page with a join token the event's policy
// verifies, naming their account.
func TestMembersPresale(t *testing.T) {
	for name, shopURL := range map[string]string{"configured shop URL": "http://127.0.0.1:8084/", "the request's host": ""} {
		t.Run(name, func(t *testing.T) {
			cfg := presaleConfig()
			cfg.ShopURL = shopURL
			srv := httptest.NewServer(newShop(t, demoshop.Config{JoinToken: cfg}))
			t.Cleanup(srv.Close)
			c := client(t)
			if _, body := do(t, c, "GET", srv.URL+"/", nil); !strings.Contains(body, `href="/signin?next=/presale"`) {
				t.Fatalf("home page without a sign-in link:\n%s", body)
			}
			if resp, _ := do(t, c, "GET", srv.URL+"/presale", nil); resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/signin?next=/presale" {
				t.Fatalf("presale before sign-in: %d %s", resp.StatusCode, resp.Header.Get("Location"))
			}
			if _, body := do(t, c, "GET", srv.URL+"/signin?next=/presale", nil); !strings.Contains(body, `value="alice"`) || !strings.Contains(body, `value="/presale"`) {
				t.Fatalf("sign-in page:\n%s", body)
			}
			resp, _ := do(t, c, "POST", srv.URL+"/signin", url.Values{"account": {"bob"}, "next": {"/presale"}})
			if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/presale" {
				t.Fatalf("sign-in: %d %s", resp.StatusCode, resp.Header.Get("Location"))
			}
			if _, body := do(t, c, "GET", srv.URL+"/", nil); !strings.Contains(body, `<b id="account">bob</b>`) || !strings.Contains(body, `href="/presale"`) {
				t.Fatalf("home page signed in:\n%s", body)
			}
			start := time.Now()
			resp, _ = do(t, c, "GET", srv.URL+"/presale", nil)
			loc, err := url.Parse(resp.Header.Get("Location"))
			if resp.StatusCode != http.StatusSeeOther || err != nil || loc.Scheme+"://"+loc.Host+loc.Path != "http://127.0.0.1:8081/" {
				t.Fatalf("presale: %d %s", resp.StatusCode, resp.Header.Get("Location"))
			}
			q := loc.Query()
			wantReturn := shopURL
			if wantReturn == "" {
				wantReturn = srv.URL + "/"
			}
			if q.Get("event") != "members" || q.Get("returnTo") != wantReturn || q.Get("lang") != "en" {
				t.Errorf("query %v", q)
			}
			policy := queue.JoinTokenPolicy{Required: true, Keys: []queue.JoinTokenKey{{Kid: "demo-1", Alg: "HS256", Secret: b64.Encode(presaleSecret)}}}
			if err := policy.Validate(); err != nil {
				t.Fatal(err)
			}
			claims, err := policy.Verify(q.Get("joinToken"), "members", time.Now())
			if err != nil {
				t.Fatalf("the minted token: %v", err)
			}
			if claims.Subject != "bob" || claims.ID == "" || claims.Expiry.Before(start.Add(demoshop.JoinTokenLifetime-time.Second)) ||
				claims.Expiry.After(time.Now().Add(demoshop.JoinTokenLifetime)) {
				t.Errorf("claims %+v", claims)
			}
			resp2, _ := do(t, c, "GET", srv.URL+"/presale", nil)
			loc2, _ := url.Parse(resp2.Header.Get("Location"))
			if c2, err := policy.Verify(loc2.Query().Get("joinToken"), "members", time.Now()); err != nil || c2.ID == claims.ID {
				t.Errorf("a second link: %+v, %v; want a fresh jti", c2, err)
			}
			if resp, _ := do(t, c, "POST", srv.URL+"/signout", url.Values{}); resp.StatusCode != http.StatusSeeOther {
				t.Fatalf("sign-out: %d", resp.StatusCode)
			}
			if resp, _ := do(t, c, "GET", srv.URL+"/presale", nil); resp.Header.Get("Location") != "/signin?next=/presale" {
				t.Fatalf("presale after sign-out: %s", resp.Header.Get("Location"))
			}
		})
	}
}

func TestMembersSignInRefuses(t *testing.T) {
	srv := httptest.NewServer(newShop(t, demoshop.Config{JoinToken: presaleConfig()}))
	t.Cleanup(srv.Close)
	c := client(t)
	if resp, _ := do(t, c, "POST", srv.URL+"/signin", url.Values{"account": {"mallory"}}); resp.StatusCode != http.StatusBadRequest {
		t.Errorf("an unknown account: %d", resp.StatusCode)
	}
	for _, next := range []string{"//evil.example/", "https://evil.example/", `/\evil.example`} {
		if resp, _ := do(t, c, "POST", srv.URL+"/signin", url.Values{"account": {"alice"}, "next": {next}}); resp.Header.Get("Location") != "/" {
			t.Errorf("next %q: sent to %s", next, resp.Header.Get("Location"))
		}
	}
	// A forged cookie is no account.
	u, _ := url.Parse(srv.URL)
	c.Jar.SetCookies(u, []*http.Cookie{{Name: demoshop.AccountCookie, Value: "mallory"}})
	if resp, _ := do(t, c, "GET", srv.URL+"/presale", nil); resp.Header.Get("Location") != "/signin?next=/presale" {
		t.Errorf("a forged account cookie: %s", resp.Header.Get("Location"))
	}
}

func TestNoPresaleUnlessConfigured(t *testing.T) {
	srv := httptest.NewServer(demoshop.Handler())
	t.Cleanup(srv.Close)
	for _, path := range []string{"/presale", "/signin"} {
		if resp, _ := do(t, client(t), "GET", srv.URL+path, nil); resp.StatusCode != http.StatusNotFound {
			t.Errorf("%s: %d, want 404", path, resp.StatusCode)
		}
	}
	if _, body := do(t, client(t), "GET", srv.URL+"/", nil); strings.Contains(body, "presale") {
		t.Errorf("home page offers a presale:\n%s", body)
	}
}

func TestPresaleConfigRefused(t *testing.T) {
	for name, mod := range map[string]func(*demoshop.JoinTokenConfig){
		"short secret":    func(c *demoshop.JoinTokenConfig) { c.Secret = []byte("short") },
		"no kid":          func(c *demoshop.JoinTokenConfig) { c.KeyID = "" },
		"relative room":   func(c *demoshop.JoinTokenConfig) { c.RoomURL = "/room" },
		"bad event id":    func(c *demoshop.JoinTokenConfig) { c.EventID = "a b" },
		"no event id":     func(c *demoshop.JoinTokenConfig) { c.EventID = "" },
		"relative return": func(c *demoshop.JoinTokenConfig) { c.ShopURL = "shop" },
	} {
		cfg := presaleConfig()
		mod(&cfg)
		if _, err := demoshop.New(demoshop.Config{JoinToken: cfg}); err == nil || !strings.Contains(err.Error(), "JoinToken") {
			t.Errorf("%s: %v", name, err)
		}
	}
}
