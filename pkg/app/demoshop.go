package app

import (
	"context"
	"log/slog"

	"github.com/waitq/waitq/internal/demoshop"
	"github.com/waitq/waitq/pkg/config"
)

// DemoShop is demoshop: the demo shop (internal/demoshop) as a program, the
// origin waitq-gate protects in compose.yaml.
type DemoShop struct {
	Common
}

var _ Service = (*DemoShop)(nil)

// Name implements Service.
func (*DemoShop) Name() string { return "demoshop" }

// Bind implements Service.
func (d *DemoShop) Bind(l *config.Loader) { d.Common.bind(l, ":8085") }

// Validate implements Service.
func (*DemoShop) Validate() error { return nil }

// Run implements Service.
func (d *DemoShop) Run(ctx context.Context, log *slog.Logger) error {
	return serveHTTP(ctx, log, d.HTTPAddr, demoshop.Handler(), d.ShutdownTimeout, nil)
}
