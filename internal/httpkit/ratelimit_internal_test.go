package httpkit

import (
	"fmt"
	"testing"
	"time"
)

// TestIPv6ClientRotatingThroughItsSlash64SharesOneBucket: a client that
// sends each request from another address of its /64 gets no more than one
// burst, and the limiter keeps one bucket for it, not one per address.
func TestIPv6ClientRotatingThroughItsSlash64SharesOneBucket(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	l := &limiter{limit: RateLimit{PerSecond: 1, Burst: 3}, now: func() time.Time { return now }, buckets: map[string]*bucket{}}
	passed := 0
	for i := range 1000 {
		if _, ok := l.allow(fmt.Sprintf("2001:db8:1:2:%x:%x::%x", i>>8, i&0xff, i+1)); ok {
			passed++
		}
	}
	if passed != 3 {
		t.Errorf("1000 requests from 1000 addresses of one /64 passed %d times, want the burst of 3", passed)
	}
	if len(l.buckets) != 1 {
		t.Errorf("the limiter holds %d buckets for one /64, want 1", len(l.buckets))
	}
	// Another /64 is another client; IPv4 addresses stay apart, an
	// IPv4-mapped address is its IPv4 address.
	for _, c := range []struct {
		client string
		ok     bool
	}{
		{"2001:db8:1:3::1", true},
		{"198.51.100.1", true},
		{"198.51.100.2", true},
		{"::ffff:198.51.100.1", true},
		{"::ffff:198.51.100.1", true},
		{"198.51.100.1", false},
	} {
		if _, ok := l.allow(c.client); ok != c.ok {
			t.Errorf("%s allowed %v, want %v", c.client, ok, c.ok)
		}
	}
}

func TestBucketKey(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"203.0.113.9", "203.0.113.9"},
		{"::ffff:203.0.113.9", "203.0.113.9"},
		{"2001:db8:a:b:c:d:e:f", "2001:db8:a:b::/64"},
		{"2001:db8:a:b::1", "2001:db8:a:b::/64"},
		{"fe80::1%eth0", "fe80::/64"},
		{"not-an-ip", "not-an-ip"},
	} {
		if got := bucketKey(tc.in); got != tc.want {
			t.Errorf("bucketKey(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
