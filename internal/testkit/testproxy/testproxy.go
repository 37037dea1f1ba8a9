// Package testproxy runs the real proxies with the configurations shipped in
// deploy/ (nginx's deploy/nginx/waitq.conf, Caddy's deploy/caddy/Caddyfile)
// in front of a forward-auth waitq-guard and a shop, each a child process of
// the test, stopped when it ends. The guard's tests and the fault campaign
// use it; each call is independent and safe from parallel tests.
package testproxy

import (
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/waitq/waitq/internal/testkit/testenv"
)

// Proxy starts a proxy in front of the guard at guardAddr and the shop at
// shopAddr (host:port each), returning the proxy's address.
type Proxy func(tb testing.TB, guardAddr, shopAddr string) string

// Nginx runs nginx with deploy/nginx/waitq.conf, returning its address.
func Nginx(tb testing.TB, guardAddr, shopAddr string) string {
	tb.Helper()
	addr, dir := testenv.FreeAddr(tb), tb.TempDir()
	site := Render(tb, "deploy/nginx/waitq.conf",
		"listen 8080;", "listen "+addr+";", "127.0.0.1:8083", guardAddr, "127.0.0.1:8085", shopAddr)
	conf := "daemon off;\nworker_processes 1;\npid " + dir + "/nginx.pid;\nerror_log stderr info;\n" +
		"events { worker_connections 256; }\nhttp {\n access_log off;\n" +
		" client_body_temp_path " + dir + "/body;\n proxy_temp_path " + dir + "/proxy;\n" +
		" fastcgi_temp_path " + dir + "/fastcgi;\n uwsgi_temp_path " + dir + "/uwsgi;\n scgi_temp_path " + dir + "/scgi;\n" +
		site + "\n}\n"
	path := filepath.Join(dir, "nginx.conf")
	if err := os.WriteFile(path, []byte(conf), 0o600); err != nil {
		tb.Fatal(err)
	}
	start(tb, addr, nil, "nginx", "-p", dir, "-c", path, "-e", "stderr")
	return addr
}

// Caddy runs caddy with deploy/caddy/Caddyfile, returning its address.
func Caddy(tb testing.TB, guardAddr, shopAddr string) string {
	tb.Helper()
	addr, dir := testenv.FreeAddr(tb), tb.TempDir()
	conf := Render(tb, "deploy/caddy/Caddyfile",
		":8080 {", "http://"+addr+" {", "127.0.0.1:8083", guardAddr, "127.0.0.1:8085", shopAddr)
	path := filepath.Join(dir, "Caddyfile")
	if err := os.WriteFile(path, []byte(conf), 0o600); err != nil {
		tb.Fatal(err)
	}
	start(tb, addr, []string{"HOME=" + dir, "XDG_DATA_HOME=" + dir, "XDG_CONFIG_HOME=" + dir},
		"caddy", "run", "--config", path, "--adapter", "caddyfile")
	return addr
}

// Render reads the shipped config at path (relative to the repository's
// root) and replaces each old address with its new one, failing when one is
// not there (the shipped config changed under the test).
func Render(tb testing.TB, path string, repl ...string) string {
	tb.Helper()
	full := filepath.Join(root(tb), path)
	b, err := os.ReadFile(full)
	if err != nil {
		tb.Fatal(err)
	}
	s := string(b)
	for i := 0; i+1 < len(repl); i += 2 {
		if !strings.Contains(s, repl[i]) {
			tb.Fatalf("%s has no %q to replace", path, repl[i])
		}
		s = strings.ReplaceAll(s, repl[i], repl[i+1])
	}
	return s
}

// root is the repository's root: the nearest directory up from the test's
// own holding go.mod.
func root(tb testing.TB) string {
	dir, err := os.Getwd()
	if err != nil {
		tb.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		up := filepath.Dir(dir)
		if up == dir {
			tb.Fatal("testproxy: no go.mod above the test's directory")
		}
		dir = up
	}
}

// start runs name with args until the test ends, waiting until addr
// accepts connections.
func start(tb testing.TB, addr string, env []string, name string, args ...string) {
	tb.Helper()
	bin, err := exec.LookPath(name)
	if err != nil {
		bin, err = exec.LookPath("/usr/sbin/" + name) // nginx, off a user's PATH
	}
	if err != nil {
		testenv.Unavailable(tb, "%s (Debian: apt-get install %s; scripts/test.sh installs it)", name, name)
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
		tb.Fatalf("%s: %v", name, err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	tb.Cleanup(func() {
		cancel()
		<-done
		if tb.Failed() {
			tb.Logf("%s's output:\n%s", name, out.String())
		}
	})
	testenv.Eventually(tb, 10*time.Second, func() (bool, string) {
		select {
		case <-done:
			tb.Fatalf("%s ended: %s", name, out.String())
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
