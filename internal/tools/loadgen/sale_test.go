package loadgen

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/waitq/waitq/internal/testkit/testredis"
)

// TestSaleFlags checks the flags of "loadgen sale": -redis is required,
// each bound is enforced.
func TestSaleFlags(t *testing.T) {
	const url = "-redis=redis://127.0.0.1:6379/0"
	tests := []struct {
		args    []string
		wantErr string
	}{
		{[]string{url}, ""},
		{[]string{url, "-joins", "10000000", "-gateways", "8", "-rate", "60000", "-interval", "5s"}, ""},
		{nil, "-redis: required, the Redis to run the sale in (redis://HOST:PORT/0)"},
		{[]string{url, "-joins", "0"}, "-joins 0: must be between 1 and 20000000"},
		{[]string{url, "-gateways", "65"}, "-gateways 65: must be between 1 and 64"},
		{[]string{url, "-rate", "0"}, "-rate 0: must be at least 1"},
		{[]string{url, "-interval", "10ms"}, "-interval 10ms: must be between 100ms and 1m"},
		{[]string{url, "-timeout", "2h"}, "-timeout 2h0m0s: must be positive and at most 1h0m0s"},
	}
	for _, tc := range tests {
		var cfg saleConfig
		var stderr bytes.Buffer
		ok, err := parseFlags("sale", &cfg, tc.args, &stderr)
		if ok != (tc.wantErr == "") || (err != nil) != (tc.wantErr != "") || (err != nil && err.Error() != tc.wantErr) {
			t.Errorf("parseFlags(%q) = %v, %v; want error %q", tc.args, ok, err, tc.wantErr)
		}
	}
}

// TestSaleDrains runs a small sale against a real redis-server: every
// person joins, is told a place by their gateway, is admitted at the rate
// and told so; the line drains, nothing is lost, and the event's keys are
// gone afterwards. (Positions may go up: joins of the same millisecond are
// ordered by user id, and the loaders' batches interleave.) (Positions may go up: joins of
// the same millisecond are ordered by user id, and the loaders' batches
// interleave.)
func TestSaleDrains(t *testing.T) {
	srv := testredis.Start(t)
	var stdout, stderr bytes.Buffer
	err := RunSale(context.Background(), []string{"-redis", srv.URL(), "-joins", "3000", "-gateways", "3", "-rate", "120000", "-interval", "200ms", "-batch", "200", "-timeout", "2m"}, &stdout, &stderr)
	t.Logf("loadgen sale:\n%s\n%s", stderr.String(), stdout.String())
	if err != nil {
		t.Fatal(err)
	}
	out := stdout.String()
	for _, want := range []string{"sale: joins=3000 gateways=3", "drained: yes (admittedTotal 3000, told admitted 3000, still waiting 0, joins neither admitted nor waiting 0)"} {
		if !strings.Contains(out, want) {
			t.Errorf("the report lacks %q", want)
		}
	}
	keys, err := srv.Client().Keys(context.Background(), "waitq:{loadgen-sale-*").Result()
	if err != nil || len(keys) > 0 {
		t.Fatalf("keys left: %v %v", keys, err)
	}
}
