package guard_test

// The forward-auth endpoint behind the real proxies, each started with the
// configuration shipped in deploy/, in front of the demo shop.

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/waitq/waitq/internal/demoshop"
	"github.com/waitq/waitq/internal/guard"
	"github.com/waitq/waitq/internal/testkit/testenv"
)

// shopVisit is what the demo shop got with one request.
type shopVisit struct {
	uri, user string
	forged    []string // other spellings of the guard's headers (identitySpellings)
}

// recordedShop is the demo shop, recording what reaches it.
type recordedShop struct {
	*httptest.Server
	mu  sync.Mutex
	got []shopVisit
}

func newRecordedShop(t *testing.T) *recordedShop {
	s := &recordedShop{}
	shop := demoshop.Handler()
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.got = append(s.got, shopVisit{r.URL.RequestURI(), strings.Join(r.Header.Values(guard.UserHeader), ","), identitySpellings(r.Header)})
		s.mu.Unlock()
		shop.ServeHTTP(w, r)
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *recordedShop) last() (shopVisit, int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.got) == 0 {
		return shopVisit{}, 0
	}
	return s.got[len(s.got)-1], len(s.got)
}

// renderConfig reads the shipped config at path and replaces each old
// address with its new one, failing when one is not there (the shipped
// config changed under the test).
func renderConfig(t *testing.T, path string, repl ...string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	for i := 0; i+1 < len(repl); i += 2 {
		if !strings.Contains(s, repl[i]) {
			t.Fatalf("%s has no %q to replace", path, repl[i])
		}
		s = strings.ReplaceAll(s, repl[i], repl[i+1])
	}
	return s
}

// startProcess runs name with args until the test ends, waiting until addr
// accepts connections.
func startProcess(t *testing.T, addr string, env []string, name string, args ...string) {
	t.Helper()
	bin, err := exec.LookPath(name)
	if err != nil {
		bin, err = exec.LookPath("/usr/sbin/" + name) // nginx, off a user's PATH
	}
	if err != nil {
		testenv.Unavailable(t, "%s (Debian: apt-get install %s; scripts/test.sh installs it)", name, name)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, bin, args...)
	out := &testenv.Buffer{}
	cmd.Stdout, cmd.Stderr, cmd.Env = out, out, append(os.Environ(), env...)
	// Its own process group, stopped as a whole: nginx's workers would
	// otherwise outlive their master and hold the output open.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 2 * time.Second
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatalf("%s: %v", name, err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		cancel()
		<-done
		if t.Failed() {
			t.Logf("%s's output:\n%s", name, out.String())
		}
	})
	testenv.Eventually(t, 10*time.Second, func() (bool, string) {
		select {
		case <-done:
			t.Fatalf("%s ended: %s", name, out.String())
		default:
		}
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
			return true, ""
		}
		return false, err.Error()
	})
}

// startNginx runs nginx with deploy/nginx/waitq.conf, returning its address.
func startNginx(t *testing.T, guardAddr, shopAddr string) string {
	addr, dir := testenv.FreeAddr(t), t.TempDir()
	site := renderConfig(t, "../../deploy/nginx/waitq.conf",
		"listen 8080;", "listen "+addr+";", "127.0.0.1:8083", guardAddr, "127.0.0.1:8085", shopAddr)
	conf := "daemon off;\nworker_processes 1;\npid " + dir + "/nginx.pid;\nerror_log stderr info;\n" +
		"events { worker_connections 64; }\nhttp {\n access_log off;\n" +
		" client_body_temp_path " + dir + "/body;\n proxy_temp_path " + dir + "/proxy;\n" +
		" fastcgi_temp_path " + dir + "/fastcgi;\n uwsgi_temp_path " + dir + "/uwsgi;\n scgi_temp_path " + dir + "/scgi;\n" +
		site + "\n}\n"
	path := filepath.Join(dir, "nginx.conf")
	if err := os.WriteFile(path, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	startProcess(t, addr, nil, "nginx", "-p", dir, "-c", path, "-e", "stderr")
	return addr
}

// startCaddy runs caddy with deploy/caddy/Caddyfile, returning its address.
func startCaddy(t *testing.T, guardAddr, shopAddr string) string {
	addr, dir := testenv.FreeAddr(t), t.TempDir()
	conf := renderConfig(t, "../../deploy/caddy/Caddyfile",
		":8080 {", "http://"+addr+" {", "127.0.0.1:8083", guardAddr, "127.0.0.1:8085", shopAddr)
	path := filepath.Join(dir, "Caddyfile")
	if err := os.WriteFile(path, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	startProcess(t, addr, []string{"HOME=" + dir, "XDG_DATA_HOME=" + dir, "XDG_CONFIG_HOME=" + dir},
		"caddy", "run", "--config", path, "--adapter", "caddyfile")
	return addr
}

func TestForwardAuthBehindRealProxies(t *testing.T) {
	for _, p := range []struct {
		name  string
		start func(t *testing.T, guardAddr, shopAddr string) string
		// clears: the proxy passes the Set-Cookie of the guard's 2xx
		// (nginx's add_header); Caddy's forward_auth drops it, and the
		// token is refused from the guard's next poll of the released
		// admissions instead.
		clears bool
	}{
		{"nginx", startNginx, true},
		{"caddy", startCaddy, false},
	} {
		t.Run(p.name, func(t *testing.T) {
			shop := newRecordedShop(t)
			f := forwardAuth(t, func(c *guard.Config) {
				// Forward authentication only: the shop is reached
				// through the proxy, the done path too.
				c.OriginURL, c.DonePath, c.CookieInsecure = "", "/order", true
				c.ReleasedInterval = 100 * time.Millisecond
			})
			ctx, cancel := context.WithCancel(context.Background())
			t.Cleanup(cancel)
			go f.guard.RunReleased(ctx)
			addr := p.start(t, strings.TrimPrefix(f.srv.URL, "http://"), strings.TrimPrefix(shop.URL, "http://"))
			walkThroughProxy(t, f, shop, "http://"+addr, p.clears)
		})
	}
}

// walkThroughProxy walks a visitor through the proxy at base: sent to the
// line, arriving with a token, shopping, ordering (released: the cookie
// cleared by the order's answer when clears, else refused from the released
// list), sent to the line again.
func walkThroughProxy(t *testing.T, f *fixture, shop *recordedShop, base string, clears bool) {
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar, Timeout: 10 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	get := func(method, uri string, header ...string) (*http.Response, string) {
		t.Helper()
		var body io.Reader
		if method == http.MethodPost {
			body = strings.NewReader("product=1")
		}
		req, _ := http.NewRequest(method, base+uri, body)
		if body != nil {
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		}
		for i := 0; i+1 < len(header); i += 2 {
			req.Header[header[i]] = append(req.Header[header[i]], header[i+1]) // as spelled
		}
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, string(b)
	}
	toLine := func(when string, header ...string) *http.Response {
		t.Helper()
		resp, _ := get(http.MethodGet, "/product/1?ref=mail", header...)
		want := room + "?event=" + event + "&returnTo=" + url.QueryEscape(base+"/product/1?ref=mail")
		if loc := resp.Header.Get("Location"); resp.StatusCode != 302 || loc != want {
			t.Fatalf("%s: %d, Location %q, want %q", when, resp.StatusCode, loc, want)
		}
		return resp
	}

	// Unadmitted: the waiting room; an API call 401; the shop sees nothing.
	toLine("unadmitted")
	// Nor with the headers that describe the request to the guard forged:
	// the proxy sets its own (the guard's returnTo names the proxy's host),
	// and what it passes on under the other name never decides.
	forged := [][]string{
		{guard.OriginalURIHeader, "/static/shop.css"},
		{guard.ForwardedURIHeader, "/static/shop.css"},
		{guard.OriginalURIHeader, "/static/shop.css", guard.ForwardedURIHeader, "/static/shop.css", guard.ForwardedMethodHeader, http.MethodHead},
		{guard.ForwardedHostHeader, "evil.example", guard.ForwardedProtoHeader, "https"},
	}
	for _, h := range forged {
		toLine(fmt.Sprintf("unadmitted with %q", h), h...)
		if _, n := shop.last(); n != 0 {
			t.Fatalf("unadmitted with %q: the shop got %d requests", h, n)
		}
	}
	resp, body := get(http.MethodGet, "/product/1", "Accept", "application/json")
	if resp.StatusCode != 401 || !strings.Contains(body, `"entry_required"`) || !strings.Contains(body, url.QueryEscape(base+"/product/1")) {
		t.Fatalf("API call: %d %s", resp.StatusCode, body)
	}
	if _, n := shop.last(); n != 0 {
		t.Fatalf("the shop got %d unadmitted requests", n)
	}
	// Bypassed: the shop's stylesheet, with no user, forged or not, in no
	// spelling.
	var spellings []string
	for _, name := range underscoredIdentity {
		spellings = append(spellings, name, "mallory")
	}
	resp, _ = get(http.MethodGet, "/static/shop.css", append([]string{guard.UserHeader, "mallory"}, spellings...)...)
	if got, _ := shop.last(); resp.StatusCode != 200 || got.user != "" || len(got.forged) != 0 {
		t.Fatalf("bypassed: %d, the shop got user %q and %q", resp.StatusCode, got.user, got.forged)
	}

	// Arrival: the cookie, then the same address without the token.
	tok := f.token("alice")
	resp, _ = get(http.MethodGet, "/product/1?waitq_token="+tok+"&ref=mail")
	loc, err := url.Parse(resp.Header.Get("Location"))
	if resp.StatusCode != 302 || err != nil || loc.RequestURI() != "/product/1?ref=mail" || (loc.Host != "" && base != "http://"+loc.Host) {
		t.Fatalf("arrival: %d, Location %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	// Admitted: the page, the user named to the shop (a forged name dropped),
	// no token in the address.
	resp, body = get(http.MethodGet, "/product/1?ref=mail", append([]string{guard.UserHeader, "mallory"}, spellings...)...)
	got, _ := shop.last()
	if resp.StatusCode != 200 || !strings.Contains(body, "signed in through the waiting room as alice") ||
		got.user != "alice" || got.uri != "/product/1?ref=mail" || len(got.forged) != 0 {
		t.Fatalf("admitted: %d, the shop got %+v", resp.StatusCode, got)
	}
	// Never an open redirect: the arrival stays on the proxy's host.
	for _, uri := range []string{"//evil.example/x", "/%2F%2Fevil.example/x", "/%5Cevil.example/x"} {
		resp, _ := get(http.MethodGet, uri+"?waitq_token="+tok)
		l := resp.Header.Get("Location")
		u, err := url.Parse(l)
		if resp.StatusCode != 302 || err != nil || (u.Host != "" && "http://"+u.Host != base) || strings.HasPrefix(l, "//") || strings.HasPrefix(l, "/\\") {
			t.Errorf("%s: %d, Location %q", uri, resp.StatusCode, l)
		}
	}

	// Ordering ends the visit: the order reaches the shop with the user,
	// the slot is released, the cookie cleared.
	// The forged headers cannot make it another request: it releases.
	resp, body = get(http.MethodPost, "/order", guard.OriginalURIHeader, "/static/shop.css", guard.ForwardedURIHeader, "/cart",
		guard.ForwardedMethodHeader, http.MethodGet)
	if got, _ := shop.last(); resp.StatusCode != 200 || !strings.Contains(body, "Thank you, alice") || got.user != "alice" {
		t.Fatalf("order: %d %s, the shop got %+v", resp.StatusCode, body, got)
	}
	cleared := len(resp.Cookies()) == 1 && resp.Cookies()[0].MaxAge < 0
	if cleared != clears {
		t.Fatalf("order: the cookie cleared %v, want %v (Set-Cookie %q)", cleared, clears, resp.Header.Values("Set-Cookie"))
	}
	select {
	case released := <-f.releases:
		if released != tok {
			t.Fatalf("released %q, want the visitor's token", released)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no release after the order")
	}
	if !clears {
		// The cookie still passes until the guard's poll lists the
		// release; then it is refused, and that answer clears it.
		testenv.Eventually(t, 5*time.Second, func() (bool, string) {
			resp, _ := get(http.MethodHead, "/cart")
			return resp.StatusCode == 302, resp.Status
		})
		if c := jar.Cookies(&url.URL{Scheme: "http", Host: strings.TrimPrefix(base, "http://")}); len(c) != 0 {
			t.Fatalf("the refused cookie stays: %v", c)
		}
	}
	toLine("released")
}
