// Package procstat reads what the kernel says of a process, for the load
// tool's report: its resident memory, open descriptors and their limit from
// /proc, a process's CPU time, the open-file limit it can raise, and the
// ephemeral port range. It reads Linux's /proc; elsewhere the readers answer
// "?", -1 or an error. The functions are safe for concurrent use.
package procstat

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// RaiseNoFile lifts the soft limit of open files to the hard limit; child
// processes (the gateway) inherit it. It returns the limits in force.
func RaiseNoFile() (soft, hard uint64, err error) {
	var l syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &l); err != nil {
		return 0, 0, fmt.Errorf("get RLIMIT_NOFILE: %w", err)
	}
	if l.Cur >= l.Max {
		return uint64(l.Cur), uint64(l.Max), nil
	}
	want := l
	want.Cur = want.Max
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &want); err != nil {
		return uint64(l.Cur), uint64(l.Max), fmt.Errorf("raise RLIMIT_NOFILE to %d: %w", want.Max, err)
	}
	return uint64(want.Cur), uint64(want.Max), nil
}

// EphemeralPorts returns the kernel's local port range, or "?".
func EphemeralPorts() string {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return "?"
	}
	return strings.Join(strings.Fields(string(b)), "-")
}

// RSS returns the resident set of process pid in bytes.
func RSS(pid int) (int64, error) {
	path := "/proc/" + strconv.Itoa(pid) + "/status"
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, fmt.Errorf("read rss: %w", err)
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			f := strings.Fields(v) // "12345 kB"
			if len(f) != 2 || f[1] != "kB" {
				break
			}
			kb, err := strconv.ParseInt(f[0], 10, 64)
			if err != nil {
				return 0, fmt.Errorf("read rss: %s: %w", path, err)
			}
			return kb << 10, nil
		}
	}
	return 0, fmt.Errorf("read rss: %s has no VmRSS line", path)
}

// OpenFDs returns the number of descriptors process pid holds, or -1.
func OpenFDs(pid int) int {
	ents, err := os.ReadDir("/proc/" + strconv.Itoa(pid) + "/fd")
	if err != nil {
		return -1
	}
	return len(ents)
}

// NoFileLimit returns the soft limit of open files of process pid, or "?".
func NoFileLimit(pid int) string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/limits")
	if err != nil {
		return "?"
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, "Max open files"); ok {
			if f := strings.Fields(v); len(f) > 0 {
				return f[0]
			}
		}
	}
	return "?"
}

// clockTicks is the unit of /proc/<pid>/stat's CPU times, USER_HZ: 100 on
// every Linux architecture Go runs on.
const clockTicks = 100

// CPU returns the CPU time (user and system, every thread) process pid used
// so far, from /proc/<pid>/stat, to the kernel's 10 ms resolution.
func CPU(pid int) (time.Duration, error) {
	path := "/proc/" + strconv.Itoa(pid) + "/stat"
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, fmt.Errorf("read cpu: %w", err)
	}
	// The command name (field 2) is in parentheses and may hold spaces:
	// the fields are counted after its closing one.
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return 0, fmt.Errorf("read cpu: %s has no command name", path)
	}
	f := strings.Fields(string(b[i+1:])) // f[0] is field 3, the state
	if len(f) < 13 {
		return 0, fmt.Errorf("read cpu: %s has %d fields", path, len(f)+2)
	}
	var ticks int64
	for _, s := range f[11:13] { // fields 14 and 15: utime, stime
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("read cpu: %s: %w", path, err)
		}
		ticks += n
	}
	return time.Duration(ticks) * time.Second / clockTicks, nil
}
