package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/waitq/waitq/internal/config"
	"github.com/waitq/waitq/internal/demoshop"
)

// DemoShop is demoshop: the demo shop (internal/demoshop) as a program, the
// origin waitq-guard protects in compose.yaml.
type DemoShop struct {
	Common
	Workers      int
	WorkTime     time.Duration
	QueueTimeout time.Duration
}

var _ Service = (*DemoShop)(nil)

// Name implements Service.
func (*DemoShop) Name() string { return "demoshop" }

// Bind implements Service.
func (d *DemoShop) Bind(l *config.Loader) {
	d.Common.bind(l, ":8085")
	l.Int(&d.Workers, "shop-workers", "WAITQ_SHOP_WORKERS", 0, "pages the shop serves at once; more wait for a worker, first come first served (0: no limit)")
	l.Duration(&d.WorkTime, "shop-work-time", "WAITQ_SHOP_WORK_TIME", 0, "time each page takes while it holds a worker, as a shop's database and rendering would; static files and /healthz take none (0: only the rendering)")
	l.Duration(&d.QueueTimeout, "shop-queue-timeout", "WAITQ_SHOP_QUEUE_TIMEOUT", demoshop.DefaultQueueTimeout, "longest wait for a worker; past it the visitor gets 503")
}

// Validate implements Service.
func (d *DemoShop) Validate() error {
	var errs []error
	if d.Workers < 0 {
		errs = append(errs, fmt.Errorf("WAITQ_SHOP_WORKERS=%d must not be negative (0: no limit)", d.Workers))
	}
	if d.WorkTime < 0 || d.WorkTime > time.Minute {
		errs = append(errs, fmt.Errorf("WAITQ_SHOP_WORK_TIME=%s must be between 0 and 1m", d.WorkTime))
	}
	if d.QueueTimeout <= 0 {
		errs = append(errs, fmt.Errorf("WAITQ_SHOP_QUEUE_TIMEOUT=%s must be positive", d.QueueTimeout))
	}
	return errors.Join(errs...)
}

// Run implements Service.
func (d *DemoShop) Run(ctx context.Context, log *slog.Logger) error {
	shop := demoshop.New(demoshop.Config{Workers: d.Workers, WorkTime: d.WorkTime, QueueTimeout: d.QueueTimeout})
	return serveHTTP(ctx, log, d.HTTPAddr, shop, d.ShutdownTimeout, nil)
}
