package helm

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// program is what the chart must know of one program: its binary, port and
// the routes it serves for probes, and the settings it cannot start without.
type program struct {
	port        int32
	live, ready string
	needs       []string // WAITQ_ variables that must be set
	docSection  string   // its heading in docs/configuration.md
}

var programs = map[string]program{
	"producer-api":    {8080, "/healthz", "/readyz", []string{"WAITQ_KAFKA_BROKERS", "WAITQ_REDIS_URL", "WAITQ_TICKET_SECRET", "WAITQ_ADMIN_TOKEN"}, "producer-api"},
	"ingest-consumer": {8082, "/healthz", "/readyz", []string{"WAITQ_KAFKA_BROKERS", "WAITQ_REDIS_URL", "WAITQ_GROUP_ID"}, "ingest-consumer"},
	"ws-gateway":      {8081, "/healthz", "/readyz", []string{"WAITQ_KAFKA_BROKERS", "WAITQ_REDIS_URL", "WAITQ_TICKET_SECRET", "WAITQ_ENTRY_KEY"}, "ws-gateway"},
	"waitq-guard":     {8083, "/waitq-guard/healthz", "/waitq-guard/readyz", []string{"WAITQ_ORIGIN_URL", "WAITQ_EVENT_ID", "WAITQ_WAITING_ROOM_URL", "WAITQ_GATEWAY_URL"}, "waitq-guard"},
}

const release = "wq"

// full turns on everything the chart has: the guard, the Ingress, a Redis
// Cluster, the gateway scaled by sockets, egress rules.
var full = []string{
	"--set", "guard.enabled=true",
	"--set", "guard.originUrl=http://shop.shop.svc:80",
	"--set", "guard.eventId=shop",
	"--set", "guard.waitingRoomUrl=https://queue.example.com/",
	"--set", "secrets.guardHealthToken=report-token-0123456789",
	"--set", "secrets.adminToken=admin-token-0123456789",
	"--set", "secrets.ticketSecret=ticket-secret-0123456789",
	"--set", "ingress.enabled=true",
	"--set", "ingress.guard.host=shop.example.com",
	"--set", "redis.url=redis://:pw@unused/",
	"--set", "redis.cluster=redis-cluster-0.redis:6379\\,redis-cluster-1.redis:6379",
	"--set", "kafka.partitions=4",
	"--set", "wsGateway.autoscaling.metric=sockets",
	"--set", "networkPolicy.egress.enabled=true",
	"--set", "trustedProxies=10.0.0.0/8",
	"--set", "wsGateway.publicUrl=https://queue.example.com",
	"--set", "wsGateway.smtp.addr=relay.example.com:587",
	"--set", "wsGateway.smtp.from=queue@example.com",
	"--set", "wsGateway.smtp.user=queue",
	"--set", "secrets.smtpPassword=smtp-password-0123",
	"--set-json", `networkPolicy.publicFrom=[{"namespaceSelector":{"matchLabels":{"kubernetes.io/metadata.name":"ingress-nginx"}}}]`,
}

// fixed has no autoscalers, an existing Secret and no topology spread.
var fixed = []string{
	"--set", "producerApi.autoscaling.enabled=false",
	"--set", "ingestConsumer.autoscaling.enabled=false",
	"--set", "wsGateway.autoscaling.enabled=false",
	"--set", "secrets.existingSecret=waitq-prod",
	"--set", "topologySpread.enabled=false",
	"--set", "networkPolicy.enabled=false",
}

func TestLint(t *testing.T) {
	for name, args := range map[string][]string{"default": nil, "full": full, "fixed": fixed} {
		t.Run(name, func(t *testing.T) {
			if out, err := helm(t, append([]string{"lint", "--strict", chartDir}, args...)...); err != nil {
				t.Fatal(err)
			} else {
				t.Log(out)
			}
		})
	}
}

func TestTemplate(t *testing.T) {
	cases := []struct {
		name     string
		args     []string
		programs []string
		hpa      bool
		ingress  bool
		spread   bool
		policies bool
		secret   string // the Secret the Deployments read
	}{
		{"default", nil, []string{"producer-api", "ingest-consumer", "ws-gateway"}, true, false, true, true, "wq-waitq-secrets"},
		{"full", full, []string{"producer-api", "ingest-consumer", "ws-gateway", "waitq-guard"}, true, true, true, true, "wq-waitq-secrets"},
		{"fixed", fixed, []string{"producer-api", "ingest-consumer", "ws-gateway"}, false, false, false, false, "waitq-prod"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out, err := helm(t, append([]string{"template", release, chartDir, "--namespace", "waitq"}, tc.args...)...)
			if err != nil {
				t.Fatal(err)
			}
			m, err := decode(out)
			if err != nil {
				t.Fatal(err)
			}
			if len(m.deployments) != len(tc.programs) {
				t.Errorf("%d Deployments, want %d", len(m.deployments), len(tc.programs))
			}
			secret := m.secrets[tc.secret]
			if tc.secret == "waitq-prod" {
				if len(m.secrets) != 0 {
					t.Errorf("the chart renders a Secret beside the existing one")
				}
			} else if secret == nil {
				t.Fatalf("no Secret %s", tc.secret)
			}
			for _, p := range tc.programs {
				checkProgram(t, m, p, programs[p], tc.hpa, tc.spread, tc.policies, tc.secret, secret)
			}
			if consumers := m.hpas["wq-waitq-ingest-consumer"]; tc.hpa && consumers.Spec.MaxReplicas > partitions(tc.args) {
				t.Errorf("ingest-consumer's HPA reaches %d replicas past %d partitions", consumers.Spec.MaxReplicas, partitions(tc.args))
			}
			if tc.name == "full" {
				checkFull(t, m)
			}
			if got := len(m.ingresses); (got == 1) != tc.ingress {
				t.Errorf("%d Ingresses, want one: %v", got, tc.ingress)
			}
		})
	}
}

// TestTemplateRefuses: values that cannot work fail the rendering.
func TestTemplateRefuses(t *testing.T) {
	for name, args := range map[string][]string{
		"consumers above partitions": {"--set", "kafka.partitions=2", "--set", "ingestConsumer.autoscaling.minReplicas=3"},
		"guard without origin":       {"--set", "guard.enabled=true", "--set", "guard.eventId=shop", "--set", "guard.waitingRoomUrl=https://q.example/"},
		"guard reports without token": {"--set", "guard.enabled=true", "--set", "guard.originUrl=http://shop", "--set", "guard.eventId=shop",
			"--set", "guard.waitingRoomUrl=https://q.example/"},
		"short ticket secret": {"--set", "secrets.ticketSecret=short"},
		"gateway metric":      {"--set", "wsGateway.autoscaling.metric=memory"},
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := helm(t, append([]string{"template", release, chartDir}, args...)...); err == nil {
				t.Fatal("rendered")
			}
		})
	}
}

func partitions(args []string) int32 {
	if slices.Contains(args, "kafka.partitions=4") {
		return 4
	}
	return 6 // values.yaml
}

func checkProgram(t *testing.T, m *manifests, name string, p program, hpa, spread, policies bool, secretName string, secret *corev1.Secret) {
	t.Helper()
	full := "wq-waitq-" + name
	d := m.deployments[full]
	if d == nil {
		t.Errorf("no Deployment %s", full)
		return
	}
	pod := labels.Set(d.Spec.Template.Labels)
	sel := labels.SelectorFromSet(d.Spec.Selector.MatchLabels)
	if !sel.Matches(pod) {
		t.Errorf("%s: its selector does not match its pods", name)
	}
	c := d.Spec.Template.Spec.Containers[0]
	if want := "/usr/local/bin/" + name; len(c.Command) != 1 || c.Command[0] != want {
		t.Errorf("%s: command %v, want %s", name, c.Command, want)
	}
	if len(c.Ports) != 1 || c.Ports[0].ContainerPort != p.port || c.Ports[0].Name != "http" {
		t.Errorf("%s: ports %+v, want http %d", name, c.Ports, p.port)
	}
	for probe, path := range map[*corev1.Probe]string{c.LivenessProbe: p.live, c.ReadinessProbe: p.ready, c.StartupProbe: p.live} {
		if probe == nil || probe.HTTPGet == nil || probe.HTTPGet.Path != path || probe.HTTPGet.Port.String() != "http" {
			t.Errorf("%s: a probe is %+v, want GET %s on http", name, probe, path)
		}
	}
	if c.Resources.Requests.Cpu().IsZero() || c.Resources.Requests.Memory().IsZero() || c.Resources.Limits.Memory().IsZero() {
		t.Errorf("%s: resources %+v", name, c.Resources)
	}
	env := map[string]corev1.EnvVar{}
	for _, e := range c.Env {
		if _, dup := env[e.Name]; dup {
			t.Errorf("%s: %s set twice", name, e.Name)
		}
		env[e.Name] = e
	}
	if got := env["WAITQ_HTTP_ADDR"].Value; got != ":"+itoa(p.port) {
		t.Errorf("%s: WAITQ_HTTP_ADDR %q", name, got)
	}
	documented := documentedSettings(t, p.docSection)
	for n := range env {
		if !documented[n] {
			t.Errorf("%s: %s is not a setting of %s in docs/configuration.md", name, n, p.docSection)
		}
	}
	for _, n := range p.needs {
		e, ok := env[n]
		if !ok {
			t.Errorf("%s: %s not set", name, n)
			continue
		}
		if e.Value == "" && e.ValueFrom == nil {
			t.Errorf("%s: %s empty", name, n)
		}
	}
	for _, e := range c.Env {
		ref := e.ValueFrom
		if ref == nil {
			continue
		}
		if ref.SecretKeyRef == nil || ref.SecretKeyRef.Name != secretName {
			t.Errorf("%s: %s comes from %+v, want the Secret %s", name, e.Name, ref, secretName)
			continue
		}
		optional := ref.SecretKeyRef.Optional != nil && *ref.SecretKeyRef.Optional
		if secret != nil && !optional {
			if _, ok := secret.Data[ref.SecretKeyRef.Key]; !ok {
				t.Errorf("%s: %s needs the key %s the Secret lacks", name, e.Name, ref.SecretKeyRef.Key)
			}
		}
	}
	for _, secretVar := range []string{"WAITQ_TICKET_SECRET", "WAITQ_ADMIN_TOKEN", "WAITQ_ENTRY_KEY", "WAITQ_REDIS_URL", "WAITQ_HEALTH_TOKEN"} {
		if e, ok := env[secretVar]; ok && e.ValueFrom == nil {
			t.Errorf("%s: %s given in plain text, not from the Secret", name, secretVar)
		}
	}
	if spread != (len(d.Spec.Template.Spec.TopologySpreadConstraints) == 2) {
		t.Errorf("%s: topology spread %+v, want it: %v", name, d.Spec.Template.Spec.TopologySpreadConstraints, spread)
	}
	for _, tsc := range d.Spec.Template.Spec.TopologySpreadConstraints {
		if s, err := metav1LabelSelector(tsc.LabelSelector); err != nil || !s.Matches(pod) {
			t.Errorf("%s: topology spread over %v does not select its pods", name, tsc.LabelSelector)
		}
	}
	if sc := c.SecurityContext; sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem {
		t.Errorf("%s: root filesystem writable", name)
	}

	if pdb := m.pdbs[full]; pdb == nil {
		t.Errorf("%s: no PodDisruptionBudget", name)
	} else if s, err := metav1LabelSelector(pdb.Spec.Selector); err != nil || !s.Matches(pod) {
		t.Errorf("%s: its PodDisruptionBudget selects other pods", name)
	}
	if svc := m.services[full]; svc == nil {
		t.Errorf("%s: no Service", name)
	} else if !labels.SelectorFromSet(svc.Spec.Selector).Matches(pod) || svc.Spec.Ports[0].Port != p.port || svc.Spec.Ports[0].TargetPort.String() != "http" {
		t.Errorf("%s: Service %+v", name, svc.Spec)
	}
	h := m.hpas[full]
	if hpa != (h != nil) {
		t.Errorf("%s: HPA %v, want one: %v", name, h != nil, hpa)
	}
	if h != nil {
		if h.Spec.ScaleTargetRef.Name != full || h.Spec.ScaleTargetRef.Kind != "Deployment" || *h.Spec.MinReplicas > h.Spec.MaxReplicas {
			t.Errorf("%s: HPA %+v", name, h.Spec)
		}
		if d.Spec.Replicas != nil {
			t.Errorf("%s: replicas set beside its HPA", name)
		}
	} else if d.Spec.Replicas == nil {
		t.Errorf("%s: neither replicas nor an HPA", name)
	}
	if np := m.policies[full]; policies != (np != nil) {
		t.Errorf("%s: NetworkPolicy %v, want one: %v", name, np != nil, policies)
	} else if np != nil {
		if s, err := metav1LabelSelector(&np.Spec.PodSelector); err != nil || !s.Matches(pod) {
			t.Errorf("%s: its NetworkPolicy selects other pods", name)
		}
		if len(np.Spec.Ingress) != 1 || np.Spec.Ingress[0].Ports[0].Port.String() != "http" {
			t.Errorf("%s: NetworkPolicy ingress %+v", name, np.Spec.Ingress)
		}
	}
}

func checkFull(t *testing.T, m *manifests) {
	t.Helper()
	env := map[string]corev1.EnvVar{}
	for _, e := range m.deployments["wq-waitq-ws-gateway"].Spec.Template.Spec.Containers[0].Env {
		env[e.Name] = e
	}
	if env["WAITQ_SMTP_ADDR"].Value != "relay.example.com:587" || env["WAITQ_SMTP_FROM"].Value != "queue@example.com" ||
		env["WAITQ_SMTP_STARTTLS"].Value != "true" || env["WAITQ_SMTP_PASSWORD"].ValueFrom == nil ||
		env["WAITQ_SMTP_PASSWORD"].ValueFrom.SecretKeyRef.Key != "smtp-password" {
		t.Errorf("ws-gateway's mail settings: %+v %+v %+v %+v", env["WAITQ_SMTP_ADDR"], env["WAITQ_SMTP_FROM"], env["WAITQ_SMTP_STARTTLS"], env["WAITQ_SMTP_PASSWORD"])
	}
	guard := m.deployments["wq-waitq-waitq-guard"].Spec.Template.Spec.Containers[0]
	for _, e := range guard.Env {
		switch e.Name {
		case "WAITQ_GATEWAY_URL":
			if e.Value != "http://wq-waitq-ws-gateway.waitq.svc:8081" {
				t.Errorf("guard's gateway %s", e.Value)
			}
		case "WAITQ_HEALTH_URL":
			if e.Value != "http://wq-waitq-producer-api.waitq.svc:8080" {
				t.Errorf("guard's health reports go to %s", e.Value)
			}
		}
	}
	for _, p := range []string{"producer-api", "ws-gateway"} {
		c := m.deployments["wq-waitq-"+p].Spec.Template.Spec.Containers[0]
		if !hasEnv(c, "WAITQ_REDIS_CLUSTER", "redis-cluster-0.redis:6379,redis-cluster-1.redis:6379") {
			t.Errorf("%s: no WAITQ_REDIS_CLUSTER", p)
		}
		if !hasEnv(c, "WAITQ_TRUSTED_PROXIES", "10.0.0.0/8") {
			t.Errorf("%s: no WAITQ_TRUSTED_PROXIES", p)
		}
	}
	gw := m.hpas["wq-waitq-ws-gateway"]
	if len(gw.Spec.Metrics) != 1 || gw.Spec.Metrics[0].Pods == nil || gw.Spec.Metrics[0].Pods.Metric.Name != "waitq_ws_sockets" {
		t.Errorf("gateway's HPA on %+v, want the sockets", gw.Spec.Metrics)
	}
	if gw.Spec.Behavior == nil || gw.Spec.Behavior.ScaleDown == nil {
		t.Errorf("gateway's HPA scales in without a stabilization window")
	}
	if m.hpas["wq-waitq-ingest-consumer"].Spec.MaxReplicas != 4 {
		t.Errorf("consumers' HPA max %d, want the 4 partitions", m.hpas["wq-waitq-ingest-consumer"].Spec.MaxReplicas)
	}
	ing := m.ingresses["wq-waitq"]
	if ing == nil {
		t.Fatal("no Ingress wq-waitq")
	}
	for _, a := range []string{"nginx.ingress.kubernetes.io/proxy-read-timeout", "nginx.ingress.kubernetes.io/proxy-send-timeout"} {
		if ing.Annotations[a] != "3600" {
			t.Errorf("Ingress %s = %q, want the WebSocket timeout 3600", a, ing.Annotations[a])
		}
	}
	hosts := map[string]string{}
	for _, r := range ing.Spec.Rules {
		b := r.HTTP.Paths[0].Backend.Service
		if svc := m.services[b.Name]; svc == nil || b.Port.Name != svc.Spec.Ports[0].Name {
			t.Errorf("Ingress rule %s goes to %s port %s, which is not a Service's", r.Host, b.Name, b.Port.Name)
		}
		hosts[r.Host] = b.Name
	}
	want := map[string]string{"api.queue.example.com": "wq-waitq-producer-api", "queue.example.com": "wq-waitq-ws-gateway", "shop.example.com": "wq-waitq-waitq-guard"}
	for h, svc := range want {
		if hosts[h] != svc {
			t.Errorf("Ingress host %s goes to %q, want %s", h, hosts[h], svc)
		}
	}
	np := m.policies["wq-waitq-ws-gateway"]
	if len(np.Spec.Ingress[0].From) != 2 || len(np.Spec.Egress) == 0 {
		t.Errorf("gateway's NetworkPolicy %+v: want the ingress controller and the guard, and egress rules", np.Spec)
	}
}

func hasEnv(c corev1.Container, name, value string) bool {
	return slices.ContainsFunc(c.Env, func(e corev1.EnvVar) bool { return e.Name == name && e.Value == value })
}

var settingRE = regexp.MustCompile("\\| `(WAITQ_[A-Z0-9_]+)` \\|")

// documentedSettings returns the WAITQ_ variables in the section "### <program>"
// of docs/configuration.md.
func documentedSettings(t *testing.T, program string) map[string]bool {
	t.Helper()
	doc, err := os.ReadFile("../../docs/configuration.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(doc), "\n### "+program+"\n")
	if !ok {
		t.Fatalf("docs/configuration.md has no section %s", program)
	}
	section, _, _ = strings.Cut(section, "\n## ")
	section, _, _ = strings.Cut(section, "\n### ")
	set := map[string]bool{}
	for _, m := range settingRE.FindAllStringSubmatch(section, -1) {
		set[m[1]] = true
	}
	return set
}
