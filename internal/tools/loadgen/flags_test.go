package loadgen

import (
	"bytes"
	"os"
	"strings"
	"testing"
	"time"
)

func TestBegin(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		ok      bool
		wantErr string // "" for none
		stdout  string // a line the header holds
	}{
		{"help", []string{"-h"}, false, "", ""},
		{"leftover arguments", []string{"extra"}, false, `unexpected arguments ["extra"]`, ""},
		{"invalid", []string{"-rate", "0"}, false, "-rate 0: must be between 1 and 200000", ""},
		{"valid", []string{"-rate", "100", "-d", "2s"}, true, "", "settings -rate 100 -d 2s -c 256 -sample 50\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var cfg lagConfig
			var stdout, stderr bytes.Buffer
			ok, err := begin("lag", &cfg, tc.args, &stdout, &stderr)
			if ok != tc.ok || (err == nil) != (tc.wantErr == "") || (err != nil && err.Error() != tc.wantErr) {
				t.Fatalf("begin(%q) = %v, %v; want %v, %q", tc.args, ok, err, tc.ok, tc.wantErr)
			}
			if !strings.Contains(stdout.String(), tc.stdout) || (tc.stdout == "") != (stdout.Len() == 0) {
				t.Fatalf("stdout:\n%s", stdout.String())
			}
			if tc.name == "help" && !strings.Contains(stderr.String(), "Usage of loadgen lag:") {
				t.Fatalf("help:\n%s", stderr.String())
			}
			if ok && (cfg.rate != 100 || cfg.duration != 2*time.Second) {
				t.Fatalf("flags not read: %+v", cfg)
			}
		})
	}
}

// TestAdaptiveFlags checks the flags of "loadgen adaptive": the defaults
// are valid, each bound is enforced, and the settings line has them all.
func TestAdaptiveFlags(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		wantErr string // "" for none
	}{
		{"defaults", nil, ""},
		{"a third run", []string{"-cautious", "1200", "-users", "10", "-arrive", "0s"}, ""},
		{"no users", []string{"-users", "0"}, "-users 0: must be between 1 and 20000"},
		{"negative arrival", []string{"-arrive", "-1s"}, "-arrive -1s: must be between 0 and 5m"},
		{"no ceiling", []string{"-ceiling", "0"}, "-ceiling 0: must be between 1 and 100000"},
		{"negative cautious", []string{"-cautious", "-5"}, "-cautious -5: must be between 0 and 100000"},
		{"step too short", []string{"-step", "50ms"}, "-step 50ms: must be between 100ms and 1m"},
		{"target zero", []string{"-target", "0s"}, "-target 0s: must be between 1ms and 1m"},
		{"no workers", []string{"-shop-workers", "0"}, "-shop-workers 0: must be between 1 and 1000"},
		{"run too long", []string{"-max-run", "1h"}, "-max-run 1h0m0s: must be between 10s and 15m0s"},
		{"two wrong", []string{"-think", "2m", "-shop-work-time", "0s"},
			"-shop-work-time 0s: must be between 1ms and 10s\n-think 2m0s: must be between 0 and 1m"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var cfg adaptiveConfig
			var stdout, stderr bytes.Buffer
			ok, err := begin("adaptive", &cfg, tc.args, &stdout, &stderr)
			if ok != (tc.wantErr == "") || (err == nil) != (tc.wantErr == "") || (err != nil && err.Error() != tc.wantErr) {
				t.Fatalf("begin(%q) = %v, %v; want error %q", tc.args, ok, err, tc.wantErr)
			}
		})
	}
	var cfg adaptiveConfig
	var stdout bytes.Buffer
	if ok, err := begin("adaptive", &cfg, []string{"-cautious", "1200"}, &stdout, &bytes.Buffer{}); !ok || err != nil {
		t.Fatal(ok, err)
	}
	const line = "settings -users 3000 -arrive 20s -ceiling 3000 -cautious 1200 -target 250ms -step 1s -shop-workers 2 -shop-work-time 25ms -shop-queue-timeout 2s -think 750ms -max-run 4m0s\n"
	if !strings.Contains(stdout.String(), line) {
		t.Fatalf("header:\n%s", stdout.String())
	}
	if got := len(cfg.modes()); got != 3 || adaptiveSVG != "bench/adaptive.svg" || adaptiveCSV != "bench/adaptive.csv" {
		t.Fatalf("modes %d, svg %q, csv %q", got, adaptiveSVG, adaptiveCSV)
	}
	if got := cfg.shopPerMinute(); got != 1600 {
		t.Fatalf("shop's limit %g a minute, want 1600 (2 workers / 25ms = 80 pages/s, 3 a visit)", got)
	}
}

// TestSocketsTransportFlag checks -transport of "loadgen sockets": ws by
// default, sse accepted, anything else refused; the settings line names it.
func TestSocketsTransportFlag(t *testing.T) {
	bin, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args    []string
		wantErr string // "" for none
		line    string
	}{
		{nil, "", "-dial-concurrency 200 -transport ws\n"},
		{[]string{"-transport", "sse", "-n", "1000"}, "", "settings -n 1000 -events 1 -interval 5s -duration 30s (6 ticks) -dial-concurrency 200 -transport sse\n"},
		{[]string{"-transport", "quic"}, `-transport "quic": must be ws or sse`, ""},
	} {
		var cfg socketsConfig
		var stdout bytes.Buffer
		ok, err := begin("sockets", &cfg, append([]string{"-gateway-bin", bin}, tc.args...), &stdout, &bytes.Buffer{})
		if ok != (tc.wantErr == "") || (err == nil) != (tc.wantErr == "") || (err != nil && err.Error() != tc.wantErr) {
			t.Fatalf("begin(%q) = %v, %v; want error %q", tc.args, ok, err, tc.wantErr)
		}
		if !strings.Contains(stdout.String(), tc.line) {
			t.Fatalf("begin(%q) header:\n%s", tc.args, stdout.String())
		}
	}
}

// TestIngestFlags checks the flags of "loadgen ingest": the defaults are
// the consumer's, the bounds are enforced, and the settings line has the
// lanes.
func TestIngestFlags(t *testing.T) {
	for _, tc := range []struct {
		args    []string
		wantErr string
	}{
		{nil, ""},
		{[]string{"-lanes", "3", "-max-batch", "250", "-rounds", "9"}, ""},
		{[]string{"-lanes", "0"}, "-lanes 0: must be between 1 and 64"},
		{[]string{"-lanes", "65"}, "-lanes 65: must be between 1 and 64"},
		{[]string{"-max-batch", "0"}, "-max-batch 0: must be between 1 and 100000"},
		{[]string{"-rounds", "0"}, "-rounds 0: must be between 1 and 9"},
		{[]string{"-rounds", "10"}, "-rounds 10: must be between 1 and 9"},
	} {
		var cfg ingestConfig
		var stdout, stderr bytes.Buffer
		ok, err := begin("ingest", &cfg, tc.args, &stdout, &stderr)
		if (err == nil) != (tc.wantErr == "") || (err != nil && err.Error() != tc.wantErr) || ok != (tc.wantErr == "") {
			t.Fatalf("begin(%q) = %v, %v; want %q", tc.args, ok, err, tc.wantErr)
		}
		if tc.wantErr != "" {
			continue
		}
		want := "-lanes 2 "
		if len(tc.args) > 0 {
			want = "-lanes 3 "
		}
		if !strings.Contains(stdout.String(), want) {
			t.Fatalf("begin(%q): the settings line lacks %q:\n%s", tc.args, want, stdout.String())
		}
	}
}

// TestMedianRound: the ingest figures are those of the round
// whose ratio is the median (the lower middle of an even
// number), whatever the order the rounds ran in.
func TestMedianRound(t *testing.T) {
	round := func(cons, zadd time.Duration) ingestRound {
		return ingestRound{cons: consumeResult{elapsed: cons}, zadd: baselineResult{elapsed: zadd}}
	}
	rounds := []ingestRound{round(4*time.Second, 2*time.Second), round(2*time.Second, 2*time.Second), round(5*time.Second, 4*time.Second)}
	if got := medianRound(rounds).ratio(); got != 0.8 {
		t.Errorf("median of 0.5, 1, 0.8 = %v, want 0.8", got)
	}
	if got := medianRound(rounds[:2]).ratio(); got != 0.5 {
		t.Errorf("median of 0.5, 1 = %v, want the lower, 0.5", got)
	}
	if got := medianRound(rounds[2:]).ratio(); got != 0.8 {
		t.Errorf("median of one round = %v, want its 0.8", got)
	}
}

// TestRoundsFlag checks -rounds of "loadgen ingest": 1 by default, in the
// settings line, and bounded.
func TestRoundsFlag(t *testing.T) {
	for _, tc := range []struct {
		args    []string
		wantErr string
		line    string
	}{
		{nil, "", "-rounds 1 "},
		{[]string{"-rounds", "5"}, "", "-rounds 5 "},
		{[]string{"-rounds", "0"}, "-rounds 0: must be between 1 and 9", ""},
	} {
		var cfg ingestConfig
		var stdout bytes.Buffer
		ok, err := begin("ingest", &cfg, tc.args, &stdout, &bytes.Buffer{})
		if ok != (tc.wantErr == "") || (err == nil) != (tc.wantErr == "") || (err != nil && err.Error() != tc.wantErr) {
			t.Fatalf("begin(%q) = %v, %v; want error %q", tc.args, ok, err, tc.wantErr)
		}
		if !strings.Contains(stdout.String(), tc.line) {
			t.Fatalf("begin(%q): the settings line lacks %q:\n%s", tc.args, tc.line, stdout.String())
		}
	}
}
