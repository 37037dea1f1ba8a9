package gateway_test

import (
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/waitq/waitq/internal/gateway"
	"github.com/waitq/waitq/internal/testkit/testsys"
)

// TestPagesSendAContentSecurityPolicy: the waiting room and the console
// come with a policy that allows their own scripts and styles only, the
// gateway's WebSocket, producer-api's origin and https images, and nothing
// inline; the contract declares the header.
func TestPagesSendAContentSecurityPolicy(t *testing.T) {
	sys := testsys.Start(t, testsys.Options{})
	e := startGateway(t, sys, gateway.Config{ProducerURL: "https://api.shop.example/base/"}, nil)
	host := strings.TrimPrefix(e.srv.URL, "http://")
	for _, path := range []string{"/", "/admin.html"} {
		r, err := http.Get(e.srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(r.Body)
		r.Body.Close()
		csp := r.Header.Get("Content-Security-Policy")
		want := "default-src 'none'; script-src 'self'; worker-src 'self'; style-src 'self'; img-src 'self' https:; font-src 'self'; " +
			"connect-src 'self' ws://" + host + " wss://" + host + " https://api.shop.example; base-uri 'none'; form-action 'self'; frame-ancestors 'none'; object-src 'none'"
		if r.StatusCode != http.StatusOK || csp != want {
			t.Errorf("%s: %d, policy\n%s\nwant\n%s", path, r.StatusCode, csp, want)
		}
		// Nothing inline that the policy would block.
		if m := inline.FindString(string(b)); m != "" {
			t.Errorf("%s holds inline %q", path, m)
		}
	}
}

// inline finds what a policy without 'unsafe-inline' blocks in a page.
var inline = regexp.MustCompile(`<script>|<script [^>]*>[^<]|<style|\sstyle=|\son[a-z]+=|javascript:`)
