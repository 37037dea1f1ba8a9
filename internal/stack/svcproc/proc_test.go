package svcproc

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// childVar makes the test binary, started again by a test, act as the
// service under test; its value is the child's mode.
const childVar = "SVCPROC_TEST_CHILD"

func TestMain(m *testing.M) {
	if mode := os.Getenv(childVar); mode != "" {
		os.Exit(child(mode))
	}
	os.Exit(m.Run())
}

// child is a small service: it says it started, serves /readyz (200, or 503
// in mode "unready") and /metrics on AddrVar, and on SIGTERM says it stops
// and exits with SVCPROC_TEST_CODE. Mode "exit" exits at once with 3; mode
// "stubborn" ignores SIGTERM.
func child(mode string) int {
	fmt.Println("child started")
	if mode == "exit" {
		return 3
	}
	sig := make(chan os.Signal, 1)
	if mode == "stubborn" {
		signal.Ignore(syscall.SIGTERM)
	} else {
		signal.Notify(sig, syscall.SIGTERM)
	}
	ln, err := net.Listen("tcp", os.Getenv(AddrVar))
	if err != nil {
		fmt.Println(err)
		return 1
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		if mode == "unready" {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	})
	mux.HandleFunc("/metrics", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprint(w, "# TYPE svcproc_test_up gauge\nsvcproc_test_up 1\n")
	})
	go func() { _ = http.Serve(ln, mux) }()
	<-sig
	fmt.Fprintln(os.Stderr, "child stopping")
	code, _ := strconv.Atoi(os.Getenv("SVCPROC_TEST_CODE"))
	return code
}

// startChild starts the test binary as a child in mode, killed when t ends.
func startChild(t *testing.T, mode string, opts Options) (*Proc, error) {
	t.Helper()
	opts.Env = append(append(os.Environ(), childVar+"="+mode), opts.Env...)
	p, err := Start(t.Context(), os.Args[0], opts)
	if p != nil {
		t.Cleanup(p.Kill)
	}
	return p, err
}

func TestProcStopRestartKill(t *testing.T) {
	p, err := startChild(t, "serve", Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !p.Running() || !strings.HasPrefix(p.URL(), "http://127.0.0.1:") || p.URL() != "http://"+p.Addr() {
		t.Fatalf("running %v at %s (%s)", p.Running(), p.URL(), p.Addr())
	}
	m, err := p.Metrics(t.Context())
	if err != nil || m["svcproc_test_up"] != 1 {
		t.Fatalf("metrics %v, %v", m, err)
	}
	if err := p.Stop(10 * time.Second); err != nil {
		t.Fatalf("stop: %v", err)
	}
	if p.Running() || p.Stop(time.Second) != nil {
		t.Fatal("running after Stop, or a second Stop failed")
	}
	select {
	case <-p.Exited():
	default:
		t.Fatal("Exited not closed after Stop")
	}
	first := p.Pid()
	if err := p.Restart(t.Context()); err != nil {
		t.Fatalf("restart: %v", err)
	}
	if err := p.Restart(t.Context()); err == nil {
		t.Fatal("restart of a running process succeeded")
	}
	if p.Pid() == first || !p.Running() {
		t.Fatalf("after restart: pid %d (was %d), running %v", p.Pid(), first, p.Running())
	}
	p.Kill()
	if p.Running() {
		t.Fatal("running after Kill")
	}
	out := p.Output()
	if strings.Count(out, "child started") != 2 || strings.Count(out, "child stopping") != 1 {
		t.Fatalf("output of two runs, one stopped gracefully:\n%s", out)
	}
	if p.Discarded() != 0 {
		t.Fatalf("discarded %d bytes with no limit", p.Discarded())
	}
}

func TestProcStopReturnsExitError(t *testing.T) {
	p, err := startChild(t, "serve", Options{Env: []string{"SVCPROC_TEST_CODE=7"}})
	if err != nil {
		t.Fatal(err)
	}
	var ee *exec.ExitError
	if err := p.Stop(10 * time.Second); !errors.As(err, &ee) || ee.ExitCode() != 7 {
		t.Fatalf("stop: %v, want exit status 7", err)
	}
}

func TestProcStopKillsAfterLimit(t *testing.T) {
	p, err := startChild(t, "stubborn", Options{})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := p.Stop(300 * time.Millisecond); !errors.Is(err, ErrNotStopped) {
		t.Fatalf("stop: %v, want ErrNotStopped", err)
	}
	if took := time.Since(start); took > 5*time.Second || p.Running() {
		t.Fatalf("stop took %s; running %v", took, p.Running())
	}
}

func TestProcStartFails(t *testing.T) {
	tests := []struct {
		name, mode, path string
		want             string
	}{
		{"exits at once", "exit", os.Args[0], "stopped before it was ready"},
		{"never ready", "unready", os.Args[0], "not ready within"},
		{"no binary", "serve", os.Args[0] + "-missing", "start"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			opts := Options{Env: append(os.Environ(), childVar+"="+tc.mode), ReadyLimit: 500 * time.Millisecond}
			p, err := Start(t.Context(), tc.path, opts)
			if err == nil || p != nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Start: %v, %v; want an error with %q", p, err, tc.want)
			}
		})
	}
}

func TestOutputKeepsAndEchoesUpToLimit(t *testing.T) {
	var echo bytes.Buffer
	o := &output{echo: &echo, limit: 5}
	for _, s := range []string{"abc", "defg", "h"} {
		if n, err := o.Write([]byte(s)); n != len(s) || err != nil {
			t.Fatalf("Write(%q) = %d, %v", s, n, err)
		}
	}
	if o.String() != "abcde" || echo.String() != "abcde" || o.Discarded() != 3 {
		t.Fatalf("kept %q, echoed %q, discarded %d", o.String(), echo.String(), o.Discarded())
	}
}
