package procstat

import (
	"os"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestReadersOfThisProcess(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads Linux's /proc")
	}
	pid := os.Getpid()
	if rss, err := RSS(pid); err != nil || rss <= 0 {
		t.Errorf("RSS = %d, %v", rss, err)
	}
	if n := OpenFDs(pid); n < 3 {
		t.Errorf("OpenFDs = %d", n)
	}
	if l := NoFileLimit(pid); l == "?" || l == "" {
		t.Errorf("NoFileLimit = %q", l)
	}
	if p := EphemeralPorts(); !strings.Contains(p, "-") {
		t.Errorf("EphemeralPorts = %q", p)
	}
	if cpu, err := CPU(pid); err != nil || cpu < 0 { // 10 ms ticks: 0 this early
		t.Errorf("CPU = %s, %v", cpu, err)
	}
	if _, err := RSS(-1); err == nil {
		t.Error("RSS of no process succeeded")
	}
}

func TestCPUAgreesWithGetrusage(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads Linux's /proc")
	}
	pid := os.Getpid()
	before, err := CPU(pid)
	if err != nil {
		t.Fatal(err)
	}
	rusage := func() time.Duration {
		var ru syscall.Rusage
		if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
			t.Fatal(err)
		}
		return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	self0 := rusage()
	for rusage()-self0 < 200*time.Millisecond { // spin: CPU time, not wall time
	}
	after, err := CPU(pid)
	if err != nil {
		t.Fatal(err)
	}
	// /proc counts in 10 ms ticks: the 200 ms spun shows within a few.
	if d := after - before; d < 150*time.Millisecond || d > 2*time.Second {
		t.Errorf("CPU grew by %s over 200 ms of spinning", d)
	}
	if _, err := CPU(-1); err == nil {
		t.Error("CPU of no process succeeded")
	}
}
