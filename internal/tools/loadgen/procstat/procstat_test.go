package procstat

import (
	"os"
	"runtime"
	"strings"
	"testing"
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
