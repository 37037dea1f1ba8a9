package loadgen

import (
	"bytes"
	"context"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/waitq/waitq/internal/testkit/testredis"
)

func TestCostFlags(t *testing.T) {
	tests := []struct {
		args    []string
		wantErr string
	}{
		{nil, ""},
		{[]string{"-joins", "999"}, "-joins 999: must be between 1000 and 5000000"},
		{[]string{"-rounds", "0"}, "-rounds 0: must be between 1 and 9"},
		{[]string{"-max-batch", "0"}, "-max-batch 0: must be between 1 and 100000"},
	}
	for _, tc := range tests {
		var cfg costConfig
		ok, err := begin("cost", &cfg, tc.args, &bytes.Buffer{}, &bytes.Buffer{})
		if ok != (tc.wantErr == "") || (err == nil) != (tc.wantErr == "") || (err != nil && err.Error() != tc.wantErr) {
			t.Errorf("begin(%q) = %v, %v; want %q", tc.args, ok, err, tc.wantErr)
		}
	}
}

func TestBaselineRefusesBadUse(t *testing.T) {
	t.Setenv("WAITQ_HTTP_ADDR", "127.0.0.1:0")
	t.Setenv("WAITQ_KAFKA_BROKERS", "127.0.0.1:1")
	for _, args := range [][]string{nil, {"producer", "extra"}, {"gateway"}} {
		if err := RunBaseline(context.Background(), args, nil, &bytes.Buffer{}); err == nil {
			t.Errorf("RunBaseline(%q) ran", args)
		}
	}
	t.Setenv("WAITQ_MAX_BATCH", "0")
	if err := RunBaseline(context.Background(), []string{"ingest"}, nil, &bytes.Buffer{}); err == nil || !strings.Contains(err.Error(), "WAITQ_MAX_BATCH") {
		t.Errorf("an ingest baseline without a batch size: %v", err)
	}
}

// TestCostRuns builds the programs and loadgen, runs "loadgen cost" on a
// small number of joins, each program a process of its own, and checks
// every program's line has positive figures, the Redis profile names the
// line's ZADD, and producer-api's line its p99.
func TestCostRuns(t *testing.T) {
	testredis.Start(t) // fails, or skips outside CI, where there is no redis-server
	dir := t.TempDir()
	args := []string{"build", "-o", dir}
	for _, p := range append(costPrograms[:len(costPrograms):len(costPrograms)], "loadgen") {
		args = append(args, "github.com/waitq/waitq/cmd/"+p)
	}
	if out, err := exec.Command("go", args...).CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(filepath.Join(dir, "loadgen"), "cost", "-bin-dir", dir, "-joins", "30000", "-rounds", "1", "-c", "8", "-max-batch", "100", "-timeout", "60s")
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("loadgen cost: %v\n%s\n%s", err, stdout.String(), stderr.String())
	}
	lines := map[string]map[string]string{}
	for line := range strings.Lines(stdout.String()) {
		f := strings.Fields(line)
		if len(f) < 2 || f[0] != "cost:" {
			continue
		}
		kv := map[string]string{}
		for _, field := range f[1:] {
			if k, v, ok := strings.Cut(field, "="); ok {
				kv[k] = v
			}
		}
		key := kv["program"] // a program's line; its Redis profile's: "redis-time <program>"
		if !strings.HasPrefix(f[1], "program=") {
			key = f[1] + " " + key
		}
		lines[key] = kv
	}
	for _, p := range []string{"producer-api", "ingest-consumer", "redis", "redis-fast-track", "kfake-broker(joins)"} {
		kv := lines[p]
		for _, k := range []string{"cpu_us_per_join", "ratio"} {
			if v, err := strconv.ParseFloat(kv[k], 64); err != nil || v <= 0 {
				t.Errorf("%s: %s=%q\n%s", p, k, kv[k], stdout.String())
			}
		}
	}
	if v, _ := strconv.ParseFloat(lines["producer-api"]["p99_ms"], 64); v <= 0 {
		t.Errorf("producer-api's p99 %q", lines["producer-api"]["p99_ms"])
	}
	for _, p := range []string{"ingest-consumer", "baseline"} {
		if v, _ := strconv.ParseFloat(lines["redis-time "+p]["zadd"], 64); v <= 0 {
			t.Errorf("%s's Redis profile has no ZADD time:\n%s", p, stdout.String())
		}
	}
}
