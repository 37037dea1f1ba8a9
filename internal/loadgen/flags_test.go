package loadgen

import (
	"bytes"
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
