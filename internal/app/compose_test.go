package app

import (
	"os"
	"slices"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/waitq/waitq/internal/config"
)

// composeFile is the part of compose.yaml the checks read.
type composeFile struct {
	Services map[string]struct {
		Image       string            `yaml:"image"`
		Entrypoint  []string          `yaml:"entrypoint"`
		Environment map[string]string `yaml:"environment"`
		Ports       []string          `yaml:"ports"`
		DependsOn   map[string]struct {
			Condition string `yaml:"condition"`
		} `yaml:"depends_on"`
		Healthcheck struct {
			Test []string `yaml:"test"`
		} `yaml:"healthcheck"`
		Deploy struct {
			Replicas int `yaml:"replicas"`
		} `yaml:"deploy"`
	} `yaml:"services"`
}

// TestComposeMatchesTheCode checks compose.yaml (which cannot be run here,
// without an image registry) against what the programs read: every WAITQ_
// variable it sets exists, the required ones are set, the published ports
// and health checks reach each program's listen address, and the services
// start after healthy Kafka and Redis.
func TestComposeMatchesTheCode(t *testing.T) {
	raw, err := os.ReadFile("../../compose.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var f composeFile
	if err := yaml.Unmarshal(raw, &f); err != nil {
		t.Fatalf("compose.yaml: %v", err)
	}
	for _, infra := range []string{"kafka", "redis"} {
		if len(f.Services[infra].Healthcheck.Test) == 0 {
			t.Errorf("%s has no health check", infra)
		}
	}
	if !strings.HasPrefix(f.Services["kafka"].Image, "apache/kafka:") {
		t.Errorf("kafka image %q is not Apache Kafka", f.Services["kafka"].Image)
	}
	if f.Services["kafka"].Environment["KAFKA_PROCESS_ROLES"] != "broker,controller" {
		t.Error("kafka is not in KRaft mode")
	}
	programs := map[string]Service{
		"producer-api": &Producer{}, "ingest-consumer": &Ingest{},
		"ws-gateway-a": &Gateway{}, "ws-gateway-b": &Gateway{},
	}
	secrets := map[string]bool{}
	for name, svc := range programs {
		s, ok := f.Services[name]
		if !ok {
			t.Errorf("compose.yaml lacks service %s", name)
			continue
		}
		if len(s.Entrypoint) != 1 || !strings.HasSuffix(s.Entrypoint[0], "/"+svc.Name()) {
			t.Errorf("%s runs %v, want %s", name, s.Entrypoint, svc.Name())
		}
		l := config.NewLoader(svc.Name(), func(string) string { return "" })
		svc.Bind(l)
		known := []string{"WAITQ_LOG_LEVEL"}
		for _, v := range l.Vars() {
			known = append(known, v.Env)
		}
		for k := range s.Environment {
			if strings.HasPrefix(k, "WAITQ_") && !slices.Contains(known, k) {
				t.Errorf("%s sets %s, which %s does not read", name, k, svc.Name())
			}
		}
		required := []string{"WAITQ_KAFKA_BROKERS", "WAITQ_REDIS_URL", "WAITQ_HTTP_ADDR"}
		if name != "ingest-consumer" {
			required = append(required, "WAITQ_TICKET_SECRET")
			secrets[s.Environment["WAITQ_TICKET_SECRET"]] = true
		}
		for _, k := range required {
			if s.Environment[k] == "" {
				t.Errorf("%s does not set %s", name, k)
			}
		}
		if s.Environment["WAITQ_KAFKA_BROKERS"] != "kafka:9092" || s.Environment["WAITQ_REDIS_URL"] != "redis://redis:6379/0" {
			t.Errorf("%s does not point at the compose Kafka and Redis: %v", name, s.Environment)
		}
		port := strings.TrimPrefix(s.Environment["WAITQ_HTTP_ADDR"], ":")
		health := strings.Join(s.Healthcheck.Test, " ")
		if !strings.Contains(health, "127.0.0.1:"+port+"/readyz") {
			t.Errorf("%s health check %q does not ask its /readyz on %s", name, health, port)
		}
		for _, p := range s.Ports {
			if !strings.HasSuffix(p, ":"+port) {
				t.Errorf("%s publishes %s, but listens on %s", name, p, port)
			}
		}
		for _, dep := range []string{"kafka", "redis"} {
			if s.DependsOn[dep].Condition != "service_healthy" {
				t.Errorf("%s does not wait for a healthy %s", name, dep)
			}
		}
	}
	if len(secrets) != 1 {
		t.Errorf("producer-api and the gateways do not share one ticket secret: %v", secrets)
	}
	if lc := f.Services["locust"]; !strings.Contains(strings.Join(lc.Entrypoint, " "), "/mnt/locust/locustfile.py") || len(lc.Ports) == 0 {
		t.Errorf("the locust profile does not run scripts/locustfile.py with its web UI published: %+v", lc)
	}
	if _, err := os.Stat("../../scripts/locustfile.py"); err != nil {
		t.Errorf("compose mounts scripts/ for Locust: %v", err)
	}
	// The guard in front of the demo shop: its settings exist, its origin is
	// the shop, and both answer their health checks on their addresses.
	guardVars := config.NewLoader("waitq-guard", func(string) string { return "" })
	(&Guard{}).Bind(guardVars)
	g, shop := f.Services["waitq-guard"], f.Services["demo-shop"]
	for k := range g.Environment {
		if strings.HasPrefix(k, "WAITQ_") && !slices.ContainsFunc(guardVars.Vars(), func(v config.Var) bool { return v.Env == k }) && k != "WAITQ_LOG_LEVEL" {
			t.Errorf("waitq-guard sets %s, which it does not read", k)
		}
	}
	if !strings.HasSuffix(strings.Join(g.Entrypoint, ""), "/waitq-guard") || !strings.HasSuffix(strings.Join(shop.Entrypoint, ""), "/demoshop") {
		t.Errorf("the guard runs %v and the shop %v", g.Entrypoint, shop.Entrypoint)
	}
	if g.Environment["WAITQ_ORIGIN_URL"] != "http://demo-shop"+shop.Environment["WAITQ_HTTP_ADDR"] ||
		!strings.Contains(strings.Join(g.Healthcheck.Test, " "), "127.0.0.1"+g.Environment["WAITQ_HTTP_ADDR"]+"/waitq-guard/readyz") ||
		!strings.Contains(strings.Join(shop.Healthcheck.Test, " "), "127.0.0.1"+shop.Environment["WAITQ_HTTP_ADDR"]+"/healthz") {
		t.Errorf("the guard %+v does not front the shop %+v with working health checks", g.Environment, shop.Environment)
	}
	if f.Services["ingest-consumer"].Deploy.Replicas < 2 || len(f.Services["producer-api"].Ports) == 0 {
		t.Error("compose.yaml no longer shows the scale-out (two consumers) or publishes producer-api")
	}
}
