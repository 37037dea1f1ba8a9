// Package testsmtp starts a real SMTP server for tests: Debian's aiosmtpd
// (python3-aiosmtpd) with its Maildir handler, each message a file the
// test reads back. A missing aiosmtpd skips, or fails with CI=true
// (scripts/lib.sh's ensure_aiosmtpd installs it).
package testsmtp

import (
	"bytes"
	"net"
	"net/mail"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"testing"
	"time"

	"github.com/waitq/waitq/internal/testkit/testenv"
)

// python is Debian's interpreter, where apt's python3-aiosmtpd is (PATH's
// python3 may be another one).
const python = "/usr/bin/python3"

// Server is a running aiosmtpd.
type Server struct {
	// Addr is its host:port.
	Addr string
	dir  string
}

// Start runs an aiosmtpd on a free loopback port until tb ends.
func Start(tb testing.TB) *Server {
	tb.Helper()
	if err := exec.Command(python, "-c", "import aiosmtpd").Run(); err != nil {
		testenv.Unavailable(tb, "aiosmtpd (Debian's python3-aiosmtpd for %s): %v", python, err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	s := &Server{Addr: "127.0.0.1:" + strconv.Itoa(port), dir: filepath.Join(tb.TempDir(), "maildir")}
	var out bytes.Buffer
	cmd := exec.Command(python, "-m", "aiosmtpd", "-n", "-l", s.Addr, "-c", "aiosmtpd.handlers.Mailbox", s.dir)
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	for deadline := time.Now().Add(10 * time.Second); ; {
		if c, err := net.DialTimeout("tcp", s.Addr, time.Second); err == nil {
			c.Close()
			return s
		}
		if time.Now().After(deadline) {
			tb.Fatalf("aiosmtpd did not listen on %s: %s", s.Addr, out.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Messages returns the messages received so far, oldest first.
func (s *Server) Messages(tb testing.TB) []*mail.Message {
	tb.Helper()
	files, _ := filepath.Glob(filepath.Join(s.dir, "new", "*"))
	type received struct {
		at time.Time
		m  *mail.Message
	}
	var all []received
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			tb.Fatal(err)
		}
		m, err := mail.ReadMessage(bytes.NewReader(data))
		if err != nil {
			tb.Fatalf("%s: %v", f, err)
		}
		st, _ := os.Stat(f)
		all = append(all, received{st.ModTime(), m})
	}
	sort.SliceStable(all, func(i, j int) bool { return all[i].at.Before(all[j].at) })
	out := make([]*mail.Message, len(all))
	for i, r := range all {
		out[i] = r.m
	}
	return out
}

// WaitFor waits up to d for n messages, and returns them.
func (s *Server) WaitFor(tb testing.TB, n int, d time.Duration) []*mail.Message {
	tb.Helper()
	for deadline := time.Now().Add(d); ; time.Sleep(50 * time.Millisecond) {
		if ms := s.Messages(tb); len(ms) >= n || time.Now().After(deadline) {
			if len(ms) < n {
				tb.Fatalf("%d messages received within %v; want %d", len(ms), d, n)
			}
			return ms
		}
	}
}
