package jointoken_test

import (
	"bytes"
	"encoding/base64"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/waitq/waitq/internal/testkit/testenv"
	"github.com/waitq/waitq/pkg/jointoken"
)

// TestShellRecipe runs the shell recipe of docs/integration.md (the script
// scripts/mint-join-token.sh, shown there verbatim) with bash and openssl,
// and verifies what it mints. Without bash, openssl or coreutils' basenc
// it skips, and fails in CI.
func TestShellRecipe(t *testing.T) {
	script, err := os.ReadFile("../../scripts/mint-join-token.sh")
	if err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile("../../docs/integration.md")
	if err != nil {
		t.Fatal(err)
	}
	_, block, ok := strings.Cut(string(doc), "<!-- scripts/mint-join-token.sh: begin -->\n```bash\n")
	block, _, ok2 := strings.Cut(block, "```\n<!-- scripts/mint-join-token.sh: end -->")
	if !ok || !ok2 {
		t.Fatal("docs/integration.md lacks the markers around the shell recipe")
	}
	if block != string(script) {
		t.Fatalf("the recipe in docs/integration.md is not scripts/mint-join-token.sh:\n%s", block)
	}
	for _, tool := range []string{"bash", "openssl", "basenc", "od"} {
		if _, err := exec.LookPath(tool); err != nil {
			testenv.Unavailable(t, "%s: %v", tool, err)
		}
	}
	secret := []byte("0123456789abcdef0123456789abcdef-rotate-me") // 42 bytes: base64url needs padding back
	key := mustKey(t)(jointoken.HMACKey("shop-2026", secret))
	run := func(args ...string) (string, error) {
		cmd := exec.Command("bash", append([]string{"../../scripts/mint-join-token.sh"}, args...)...)
		cmd.Env = append(os.Environ(), "KID=shop-2026", "SECRET="+base64.RawURLEncoding.EncodeToString(secret), "LC_ALL=C")
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Logf("stderr: %s", stderr.String())
		}
		return strings.TrimSpace(string(out)), err
	}
	tests := []struct {
		name, sub, event, ttl, jti string
	}{
		{"with a one-time id", "customer-4711", "presale", "600", "0f3c9a7e"},
		{"reusable, default lifetime", "acct:42@shop.example", "sale_1", "", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			args := []string{tc.sub, tc.event}
			if tc.ttl != "" || tc.jti != "" {
				args = append(args, tc.ttl, tc.jti)
			}
			start := time.Now()
			tok, err := run(args...)
			if err != nil {
				t.Fatalf("the script: %v", err)
			}
			c, err := jointoken.Verify(tok, []jointoken.Key{key}, tc.event, time.Now())
			if err != nil {
				t.Fatalf("Verify(%s): %v", tok, err)
			}
			if c.Subject != tc.sub || c.ID != tc.jti || c.KeyID != "shop-2026" ||
				c.Expiry.Sub(c.IssuedAt) != 600*time.Second || c.IssuedAt.Before(start.Truncate(time.Second)) {
				t.Errorf("claims %+v", c)
			}
			if h := decode(t, tok, 0); len(h) != 3 || h["alg"] != "HS256" || h["typ"] != "JWT" {
				t.Errorf("header %v", h)
			}
		})
	}
	for _, bad := range [][]string{{"a b", "presale"}, {"alice", "pre sale"}, {"alice", "presale", "ten"}, {"alice", "presale", "600", "a/b"}, {}} {
		if tok, err := run(bad...); err == nil {
			t.Errorf("the script minted %s for %q", tok, bad)
		}
	}
}
