package stack

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/waitq/waitq/internal/app"
	"github.com/waitq/waitq/internal/config"
	"github.com/waitq/waitq/internal/demoshop"
	"github.com/waitq/waitq/internal/gateway"
	"github.com/waitq/waitq/internal/guard"
	"github.com/waitq/waitq/internal/queue"
)

// Devstack runs the whole system in one process for a newcomer: an embedded
// Kafka-protocol broker (kfake) and Redis (a redis-server child process, or
// miniredis when none is installed) unless real ones are configured, and
// every service, with a demo event.
type Devstack struct {
	Brokers      []string
	RedisURL     string
	ProducerAddr string
	GatewayAddr  string
	IngestAddr   string
	AdminToken   string
	TicketSecret string
	DemoEvent    string
	DemoDrop     string
	DemoShop     string
	DemoMembers  string
	ShopAddr     string
	KafkaDataDir string

	out io.Writer
	// joinKey is the demo shop's join-token secret, new at every start.
	joinKey []byte
}

var _ app.Service = (*Devstack)(nil)

// Name implements app.Service.
func (*Devstack) Name() string { return "devstack" }

// Bind implements app.Service.
func (d *Devstack) Bind(l *config.Loader) {
	l.List(&d.Brokers, "kafka-brokers", "WAITQ_KAFKA_BROKERS", "", "Kafka brokers to use (empty: an embedded kfake broker)")
	l.URL(&d.RedisURL, "redis-url", "WAITQ_REDIS_URL", "", "Redis to use (empty: an embedded redis-server child, or miniredis); logged with its password redacted")
	l.String(&d.ProducerAddr, "producer-addr", "WAITQ_PRODUCER_ADDR", "127.0.0.1:8080", "producer-api listen address")
	l.String(&d.GatewayAddr, "gateway-addr", "WAITQ_GATEWAY_ADDR", "127.0.0.1:8081", "ws-gateway listen address")
	l.String(&d.IngestAddr, "ingest-addr", "WAITQ_INGEST_ADDR", "127.0.0.1:8082", "ingest-consumer health listen address")
	l.Secret(&d.AdminToken, "admin-token", "WAITQ_ADMIN_TOKEN", "admin token (empty: a random one, printed)")
	l.Secret(&d.TicketSecret, "ticket-secret", "WAITQ_TICKET_SECRET", "ticket secret (empty: a random one)")
	l.String(&d.DemoEvent, "demo-event", "WAITQ_DEMO_EVENT", "demo", "id of the demo event created at start (empty: none)")
	l.String(&d.DemoDrop, "demo-drop", "WAITQ_DEMO_DROP", "drop", "id of the demo ticket drop created at start: its pre-queue is open at once and it opens a minute later (empty: none)")
	l.String(&d.DemoShop, "demo-shop", "WAITQ_DEMO_SHOP", "shop", "id of the event that guards the demo shop: the shop runs behind waitq-guard on WAITQ_SHOP_ADDR and admitted visitors are sent back to it (empty: no shop)")
	l.String(&d.DemoMembers, "demo-members", "WAITQ_DEMO_MEMBERS", "members", "id of the demo members' presale: invite only, the demo shop mints a join token for a signed-in demo customer (empty: none; needs the demo shop)")
	l.String(&d.ShopAddr, "shop-addr", "WAITQ_SHOP_ADDR", "127.0.0.1:8084", "listen address of waitq-guard in front of the demo shop")
	l.String(&d.KafkaDataDir, "kafka-data-dir", "WAITQ_KAFKA_DATA_DIR", "", "directory where the embedded broker keeps its log (empty: memory only)")
}

// Validate implements app.Service.
func (d *Devstack) Validate() error {
	if d.AdminToken == "" {
		d.AdminToken = RandomHex(16)
	}
	if d.TicketSecret == "" {
		d.TicketSecret = RandomHex(32)
	}
	if len(d.TicketSecret) < app.MinSecretLen {
		return fmt.Errorf("WAITQ_TICKET_SECRET must be at least %d characters", app.MinSecretLen)
	}
	return nil
}

// Run implements app.Service.
func (d *Devstack) Run(ctx context.Context, log *slog.Logger) error {
	out := d.out
	if out == nil {
		out = os.Stderr
	}
	brokers, stopKafka, err := d.kafka(log)
	if err != nil {
		return err
	}
	defer stopKafka()
	redisURL, redisKind, stopRedis, err := d.redis(ctx)
	if err != nil {
		return err
	}
	defer stopRedis()

	shopURL := ""
	shopToken := RandomHex(24) // the demo shop event's sale credential, new at every start
	if d.DemoShop != "" {
		origin, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return fmt.Errorf("demo shop: %w", err)
		}
		shopCfg := demoShop
		shopCfg.GatewayURL, shopCfg.EventID, shopCfg.ShopToken = "http://"+d.GatewayAddr, d.DemoShop, shopToken // the seated ticket's seat map
		if d.DemoMembers != "" {
			d.joinKey = queue.RandomKey()
			shopCfg.JoinToken = demoshop.JoinTokenConfig{
				KeyID: demoJoinKeyID, Secret: d.joinKey, EventID: d.DemoMembers,
				RoomURL: "http://" + d.GatewayAddr + "/", ShopURL: "http://" + d.ShopAddr + "/",
			}
		}
		handler, err := demoshop.New(shopCfg)
		if err != nil {
			return fmt.Errorf("demo shop: %w", err)
		}
		shop := &http.Server{Handler: handler, ReadHeaderTimeout: 5 * time.Second}
		go func() { _ = shop.Serve(origin) }()
		defer shop.Close()
		shopURL = "http://" + origin.Addr().String()
	}
	reportToken := RandomHex(24) // the demo shop event's, new at every start
	svcs := &Group{Log: log}
	defer svcs.Close()
	for _, s := range d.services(brokers, redisURL) {
		if _, err := svcs.Start(ctx, s.svc, s.env, ServiceOptions{}); err != nil {
			return err
		}
	}
	if err := d.createDemos(ctx, "http://"+d.ProducerAddr, reportToken, shopToken); err != nil {
		return err
	}
	if shopURL != "" {
		// The guard starts once the shop's event exists, so that its first
		// health report is taken.
		s := d.guard(shopURL, reportToken)
		if _, err := svcs.Start(ctx, s.svc, s.env, ServiceOptions{ReadyPath: guard.AdminPrefix + "readyz"}); err != nil {
			return err
		}
	}
	d.printWelcome(out, brokers, redisURL, redisKind)
	return svcs.Wait(ctx)
}

// devService is a service of the devstack with its environment.
type devService struct {
	svc app.Service
	env map[string]string
}

// services are the three services with the settings the devstack changes;
// every other setting keeps its program's default.
func (d *Devstack) services(brokers []string, redisURL string) []devService {
	env := func(addr string, extra map[string]string) map[string]string {
		m := map[string]string{
			"WAITQ_HTTP_ADDR":        addr,
			"WAITQ_KAFKA_BROKERS":    strings.Join(brokers, ","),
			"WAITQ_REDIS_URL":        redisURL,
			"WAITQ_SHUTDOWN_TIMEOUT": "5s",
			"WAITQ_LOG_LEVEL":        "info",
		}
		maps.Copy(m, extra)
		return m
	}
	local := "localhost:*,127.0.0.1:*"
	svcs := []devService{
		{&app.Producer{}, env(d.ProducerAddr, map[string]string{
			"WAITQ_TICKET_SECRET": d.TicketSecret, "WAITQ_ADMIN_TOKEN": d.AdminToken,
			"WAITQ_ALLOWED_ORIGINS": local,
			"WAITQ_RATE":            "0", // no limit: load tests send everything from one address
			// Plain HTTP on this machine: the visitor cookie cannot be Secure.
			"WAITQ_COOKIE_INSECURE": "true",
		})},
		{&app.Ingest{}, env(d.IngestAddr, map[string]string{
			"WAITQ_DISCOVERY_INTERVAL": "1s", // a new event's joins reach its line sooner
		})},
		{&app.Gateway{}, env(d.GatewayAddr, map[string]string{
			"WAITQ_TICKET_SECRET": d.TicketSecret, "WAITQ_ALLOWED_ORIGINS": local,
			"WAITQ_PRODUCER_URL": "http://" + d.ProducerAddr,
			"WAITQ_RATE":         "0", // no limit, as above
			"WAITQ_CONNECT_RATE": "0",
			"WAITQ_HOLD_RATE":    "0",
		})},
	}
	return svcs
}

// guard is waitq-guard in front of the demo shop at shopURL, reporting the
// shop's health to producer-api with the shop event's report token.
func (d *Devstack) guard(shopURL, reportToken string) devService {
	gw := "http://" + d.GatewayAddr
	return devService{&app.Guard{}, map[string]string{
		"WAITQ_HTTP_ADDR": d.ShopAddr, "WAITQ_SHUTDOWN_TIMEOUT": "5s", "WAITQ_LOG_LEVEL": "info",
		"WAITQ_ORIGIN_URL": shopURL, "WAITQ_EVENT_ID": d.DemoShop,
		"WAITQ_WAITING_ROOM_URL": gw + "/", "WAITQ_GATEWAY_URL": gw,
		"WAITQ_DONE_PATH": "/order",
		// The members' sign-in and presale link lead to the members' line,
		// not through the shop's own.
		"WAITQ_BYPASS":          strings.Join(append(slices.Clone(guard.DefaultBypass), "/signin", "/signout", "/presale"), ","),
		"WAITQ_COOKIE_INSECURE": "true", // plain HTTP on loopback
		"WAITQ_FORWARD_TOKEN":   "true", // the shop holds seats with it
		"WAITQ_HEALTH_URL":      "http://" + d.ProducerAddr, "WAITQ_HEALTH_TOKEN": reportToken,
	}}
}

// kafka returns the brokers to use, starting an embedded kfake when none are
// configured.
func (d *Devstack) kafka(log *slog.Logger) ([]string, func(), error) {
	if len(d.Brokers) > 0 {
		return d.Brokers, func() {}, nil
	}
	c, err := StartKafka(KafkaOptions{DataDir: d.KafkaDataDir})
	if err != nil {
		return nil, nil, fmt.Errorf("embedded %w", err)
	}
	log.Info("embedded Kafka-protocol broker (kfake) started", "addrs", c.ListenAddrs())
	return c.ListenAddrs(), c.Close, nil
}

// redis returns the Redis URL to use, starting a redis-server child process
// (or miniredis when none is installed) when none is configured.
func (d *Devstack) redis(ctx context.Context) (url, kind string, stop func(), err error) {
	if d.RedisURL != "" {
		return d.RedisURL, "external", func() {}, nil
	}
	r, err := StartRedis(ctx, RedisOptions{Miniredis: true})
	if err != nil {
		return "", "", nil, fmt.Errorf("embedded redis-server: %w", err)
	}
	kind = "redis-server child process"
	if r.Miniredis != nil {
		kind = "miniredis (install redis-server for real Redis)"
	}
	return r.URL(), kind, r.Close, nil
}

func (d *Devstack) printWelcome(w io.Writer, brokers []string, redisURL, redisKind string) {
	p, g := "http://"+d.ProducerAddr, "http://"+d.GatewayAddr
	gw := gateway.DefaultConfig()
	fmt.Fprintf(w, `
waitq devstack is running. Ctrl-C stops it.

  producer-api     %[1]s   (health /readyz, metrics /metrics)
  waiting room     %[2]s/   (the page people use; the operators' console %[2]s/admin.html)
  ws-gateway       %[2]s   (WebSocket /queue-status/{eventId}, health /readyz, metrics /metrics)
  ingest-consumer  http://%[3]s   (health /readyz, metrics /metrics)
  kafka brokers    %[4]s
  redis            %[5]s (%[6]s)
  admin token      %[7]s
  demo event       %[8]s (capacity %[10]d, hold %[11]d s; admission every %[12]s, status every %[13]s)

Get a visitor identity (a cookie), join the demo event's line with it and keep the ticket:
  curl -s -c /tmp/waitq.jar -X POST %[1]s/v1/visitor
  TICKET=$(curl -s -b /tmp/waitq.jar -X POST %[1]s/v1/events/%[8]s/queue | sed 's/.*"ticket":"\([^"]*\)".*/\1/')

Watch the place live over WebSocket (wsdump comes with Debian's python3-websocket):
  wsdump "ws://%[9]s/queue-status/%[8]s?ticket=$TICKET"

Or poll it:
  curl -s "%[2]s/v1/events/%[8]s/status?ticket=$TICKET"

See the event (waiting, holders, capacity):
  curl -s -H 'Authorization: Bearer %[7]s' %[1]s/v1/admin/events/%[8]s

Create another event:
  curl -s -X PUT -H 'Authorization: Bearer %[7]s' -d '{"capacity":100,"partitions":3}' %[1]s/v1/admin/events/sale1

`, p, g, d.IngestAddr, strings.Join(brokers, ","), redisURL, redisKind, d.AdminToken, d.DemoEvent, d.GatewayAddr,
		demo.Capacity, demo.StaySeconds, gw.AdmitInterval, gw.StatusInterval)
	if d.DemoShop != "" {
		fmt.Fprintf(w, `Walk the whole path in a browser: open the demo shop, protected by waitq-guard
(event %[2]s, %[3]d visitor at a time; a second window waits in line):
  http://%[1]s/
You are sent to the waiting room, admitted, and sent back to the page you asked for;
placing the order gives your slot to the next in line.
Its admission is adaptive: the guard reports the shop's p95 and errors every second and
the rate (at most %[4]d a minute) follows them, to keep the p95 under %[5]d ms. Watch it on
the admin view, or: curl -s -H 'Authorization: Bearer %[6]s' %[7]s/v1/admin/events/%[2]s

`, d.ShopAddr, d.DemoShop, demoShopCapacity, demoShopPerMinute, demoShopTargetMs, d.AdminToken, "http://"+d.ProducerAddr)
	}
	if d.DemoShop != "" && d.DemoMembers != "" {
		fmt.Fprintf(w, `A members' presale, %[2]s, invite only: sign in to the demo shop as a demo customer and
follow its presale link; the shop signs a join token for your account, and the waiting room
joins with it (one place per account, whatever the browser):
  http://%[1]s/signin

`, d.ShopAddr, d.DemoMembers)
	}
	if d.DemoDrop != "" {
		fmt.Fprintf(w, `A ticket drop, %[3]s: its pre-queue is open now and it opens %[4]s after the start, when
everyone gathered is put in a random order anyone can check. It asks each join for a
proof of work, which the page solves by itself in a moment. Open the waiting room on it:
  %[2]s/?event=%[3]s
Its draw's commitment now, its seed after the opening:
  curl -s %[1]s/v1/events/%[3]s
After the opening, export and verify the draw:
  curl -s -H 'Authorization: Bearer %[5]s' %[1]s/v1/admin/events/%[3]s/draw | go run ./cmd/waitq-verify

`, p, g, d.DemoDrop, demoDropDelay, d.AdminToken)
	}
}
