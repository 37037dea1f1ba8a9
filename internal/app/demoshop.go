package app

import (
	"context"
	"log/slog"

	"github.com/waitq/waitq/internal/config"
	"github.com/waitq/waitq/internal/demoshop"
)

// DemoShop is demoshop: the demo shop (internal/demoshop) as a program, the
// origin waitq-guard protects in compose.yaml.
type DemoShop struct {
	Common
	Config demoshop.Config
}

var _ Service = (*DemoShop)(nil)

// Name implements Service.
func (*DemoShop) Name() string { return "demoshop" }

// Bind implements Service.
func (d *DemoShop) Bind(l *config.Loader) {
	d.Config = demoshop.DefaultConfig()
	def, cfg := d.Config, &d.Config
	d.Common.bind(l, ":8085")
	l.Int(&cfg.Workers, "shop-workers", "WAITQ_SHOP_WORKERS", def.Workers, "pages the shop serves at once; more wait for a worker, first come first served (0: no limit)")
	l.Duration(&cfg.WorkTime, "shop-work-time", "WAITQ_SHOP_WORK_TIME", def.WorkTime, "time each page takes while it holds a worker, as a shop's database and rendering would; static files and /healthz take none (0: only the rendering)")
	l.Duration(&cfg.QueueTimeout, "shop-queue-timeout", "WAITQ_SHOP_QUEUE_TIMEOUT", def.QueueTimeout, "longest wait for a worker; past it the visitor gets 503")
	l.String(&cfg.GatewayURL, "shop-gateway-url", "WAITQ_SHOP_GATEWAY_URL", "", "ws-gateway's base URL, for the seated ticket's seat holds with the entry token the guard forwards (WAITQ_FORWARD_TOKEN; empty: no seat map)")
	l.String(&cfg.EventID, "shop-event-id", "WAITQ_SHOP_EVENT_ID", "", "the event of the seats, the guard's WAITQ_EVENT_ID (required with WAITQ_SHOP_GATEWAY_URL)")
	l.Secret(&cfg.ShopToken, "shop-token", "WAITQ_SHOP_TOKEN", "the seats' event's shopToken (admin API), the shop's credential for the sales (required with WAITQ_SHOP_GATEWAY_URL)")
}

// Validate implements Service.
func (d *DemoShop) Validate() error { return d.Config.Validate() }

// Run implements Service.
func (d *DemoShop) Run(ctx context.Context, log *slog.Logger) error {
	shop, err := demoshop.New(d.Config)
	if err != nil {
		return err
	}
	return serveHTTP(ctx, log, d.HTTPAddr, shop, d.ShutdownTimeout, nil)
}
