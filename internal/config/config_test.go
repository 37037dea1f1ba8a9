package config_test

import (
	"strings"
	"testing"
	"time"

	"github.com/waitq/waitq/internal/config"
)

type settings struct {
	addr    string
	brokers []string
	wait    time.Duration
	n       int
	on      bool
	secret  string
	url     string
}

func load(env map[string]string, args ...string) (settings, *config.Loader, error) {
	var s settings
	l := config.NewLoader("t", func(k string) string { return env[k] })
	l.String(&s.addr, "addr", "T_ADDR", ":1", "address")
	l.List(&s.brokers, "brokers", "T_BROKERS", "a:1", "brokers")
	l.Duration(&s.wait, "wait", "T_WAIT", time.Second, "wait")
	l.Int(&s.n, "n", "T_N", 3, "n")
	l.Bool(&s.on, "on", "T_ON", false, "on")
	l.Secret(&s.secret, "secret", "T_SECRET", "secret")
	l.URL(&s.url, "url", "T_URL", "redis://127.0.0.1:6379/0", "url")
	return s, l, l.Parse(args)
}

func TestDefaultsEnvAndFlags(t *testing.T) {
	s, _, err := load(nil)
	if err != nil || s.addr != ":1" || len(s.brokers) != 1 || s.wait != time.Second || s.n != 3 || s.on {
		t.Fatalf("defaults: %+v %v", s, err)
	}
	env := map[string]string{"T_ADDR": ":2", "T_BROKERS": "x:1, y:2,", "T_WAIT": "250ms", "T_N": "7", "T_ON": "true"}
	s, _, err = load(env)
	if err != nil || s.addr != ":2" || strings.Join(s.brokers, "|") != "x:1|y:2" || s.wait != 250*time.Millisecond || s.n != 7 || !s.on {
		t.Fatalf("env: %+v %v", s, err)
	}
	s, _, err = load(env, "-addr", ":3", "-n=9")
	if err != nil || s.addr != ":3" || s.n != 9 {
		t.Fatalf("flags over env: %+v %v", s, err)
	}
}

func TestBadValuesAreNamed(t *testing.T) {
	_, _, err := load(map[string]string{"T_WAIT": "5", "T_N": "many"})
	if err == nil || !strings.Contains(err.Error(), "T_WAIT") || !strings.Contains(err.Error(), "T_N") {
		t.Fatalf("err = %v, want both T_WAIT and T_N named", err)
	}
	if _, _, err := load(nil, "-nope"); err == nil {
		t.Fatal("unknown flag accepted")
	}
	if _, _, err := load(nil, "stray"); err == nil {
		t.Fatal("stray argument accepted")
	}
}

func TestSecretsAreMasked(t *testing.T) {
	s, l, err := load(map[string]string{"T_SECRET": "hunter2-hunter2", "T_URL": "redis://app:hunter2-hunter2@redis.internal:6379/0"})
	if s.url != "redis://app:hunter2-hunter2@redis.internal:6379/0" {
		t.Fatalf("url setting = %q", s.url)
	}
	if err != nil {
		t.Fatal(err)
	}
	attrs := l.LogAttrs()
	for i := 0; i < len(attrs); i += 2 {
		if attrs[i] == "T_SECRET" && attrs[i+1] != "(set)" {
			t.Errorf("secret printed as %v", attrs[i+1])
		}
		if attrs[i] == "T_URL" && attrs[i+1] != "redis://app:xxxxx@redis.internal:6379/0" {
			t.Errorf("url logged as %v, want its host kept and its password redacted", attrs[i+1])
		}
		if s, _ := attrs[i+1].(string); strings.Contains(s, "hunter2") {
			t.Errorf("%v leaks the secret", attrs[i])
		}
	}
}
