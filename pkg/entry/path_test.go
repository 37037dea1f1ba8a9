package entry_test

import (
	"testing"

	"github.com/waitq/waitq/pkg/entry"
)

func TestPathKey(t *testing.T) {
	for p, want := range map[string]string{
		"/":                             "/",
		"":                              "/",
		"//":                            "/",
		"/order":                        "/order",
		"/ORDER":                        "/order",
		"/order/":                       "/order",
		"//order":                       "/order",
		"/./order":                      "/order",
		"/cart/../order":                "/order",
		"/../order":                     "/order",
		"/order;x=1":                    "/order",
		"/order;x=1/":                   "/order",
		"/static/..;/order":             "/order",
		"/static/..;jsessionid=1/order": "/order",
		"/static\\..\\order":            "/order",
		"/%6Frder":                      "/order", // decoded a second time
		"/%256Frder":                    "/order",
		"/%2e%2e/order":                 "/order",
		"/order.":                       "/order",
		"/order. ":                      "/order",
		"/Product/7/":                   "/product/7",
		"/order/x":                      "/order/x",
		"/orders":                       "/orders",
		"/or%zzder":                     "/or%zzder", // not an escape: kept
	} {
		if got := entry.PathKey(p); got != want {
			t.Errorf("PathKey(%q) = %q, want %q", p, got, want)
		}
	}
}
