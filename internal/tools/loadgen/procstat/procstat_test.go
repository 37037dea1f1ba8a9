package procstat

import (
	"os"
	"runtime"
	"strings"
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
	if SelfCPU() <= 0 {
		t.Error("SelfCPU is not positive")
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
	self0 := SelfCPU()
	for SelfCPU()-self0 < 200*time.Millisecond { // spin: CPU time, not wall time
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
