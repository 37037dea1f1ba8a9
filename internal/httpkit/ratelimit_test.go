package httpkit_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/waitq/waitq/internal/httpkit"
)

func TestClientIPs(t *testing.T) {
	ips, err := httpkit.NewClientIPs([]string{"10.0.0.0/8", "192.168.1.1"})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, peer, xff, want string
	}{
		{"direct client", "203.0.113.9:5000", "", "203.0.113.9"},
		{"spoofed header from an untrusted peer", "203.0.113.9:5000", "1.2.3.4", "203.0.113.9"},
		{"through a trusted proxy", "10.1.2.3:80", "198.51.100.7", "198.51.100.7"},
		{"client-supplied hops are skipped", "10.1.2.3:80", "1.2.3.4, 198.51.100.7", "198.51.100.7"},
		{"two trusted proxies", "10.1.2.3:80", "198.51.100.7, 192.168.1.1", "198.51.100.7"},
		{"malformed hop stops the walk", "10.1.2.3:80", "198.51.100.7, garbage", "10.1.2.3"},
		{"trusted proxy, no header", "10.1.2.3:80", "", "10.1.2.3"},
	}
	for _, tc := range tests {
		r := httptest.NewRequest(http.MethodGet, "/", nil)
		r.RemoteAddr = tc.peer
		if tc.xff != "" {
			r.Header.Set("X-Forwarded-For", tc.xff)
		}
		if got := ips.Of(r); got != tc.want {
			t.Errorf("%s: client %s, want %s", tc.name, got, tc.want)
		}
	}
	if _, err := httpkit.NewClientIPs([]string{"not-a-cidr"}); err == nil {
		t.Error("a bad trusted proxy was accepted")
	}
}
