package app

import (
	"strings"
	"testing"

	"github.com/waitq/waitq/internal/config"
)

// TestGatewayMailSettings: mail is off without WAITQ_SMTP_ADDR; with it,
// WAITQ_PUBLIC_URL (the links' base) and WAITQ_SMTP_FROM are required.
func TestGatewayMailSettings(t *testing.T) {
	load := func(env map[string]string) *Gateway {
		g := &Gateway{}
		l := config.NewLoader("ws-gateway", func(k string) string { return env[k] })
		g.Bind(l)
		if err := l.Parse(nil); err != nil {
			t.Fatal(err)
		}
		return g
	}
	base := map[string]string{"WAITQ_TICKET_SECRET": "0123456789abcdef0123"}
	if g := load(base); g.Mail.Enabled() || g.Validate() != nil {
		t.Fatalf("no relay: enabled %v, %v", g.Mail.Enabled(), g.Validate())
	}
	for _, c := range []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{"WAITQ_SMTP_ADDR": "smtp.example.com:587", "WAITQ_SMTP_FROM": "q@example.com"}, "WAITQ_PUBLIC_URL"},
		{map[string]string{"WAITQ_SMTP_ADDR": "smtp.example.com:587", "WAITQ_PUBLIC_URL": "https://q.example.com"}, "WAITQ_SMTP_FROM"},
		{map[string]string{"WAITQ_SMTP_ADDR": "smtp.example.com", "WAITQ_SMTP_FROM": "q@example.com", "WAITQ_PUBLIC_URL": "https://q.example.com"}, "WAITQ_SMTP_ADDR"},
		{map[string]string{"WAITQ_SMTP_ADDR": "smtp.example.com:587", "WAITQ_SMTP_FROM": "q@example.com", "WAITQ_PUBLIC_URL": "https://q.example.com"}, ""},
	} {
		env := map[string]string{}
		for k, v := range base {
			env[k] = v
		}
		for k, v := range c.env {
			env[k] = v
		}
		err := load(env).Validate()
		if (c.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%v: %v; want an error naming %q", c.env, err, c.want)
		}
	}
}
