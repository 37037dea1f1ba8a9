package stack

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"time"

	"github.com/waitq/waitq/internal/app"
	"github.com/waitq/waitq/internal/config"
)

// Broker runs franz-go's kfake, a Kafka wire-protocol broker, as a program of
// its own: the broker of the container suite, where no Apache Kafka image can
// be had. It listens on one address and tells clients another (its network
// alias), as a Kafka broker's advertised listener does.
type Broker struct {
	Addr              string
	Advertise         string
	DataDir           string
	MinSessionTimeout time.Duration
}

var _ app.Service = (*Broker)(nil)

// Name implements app.Service.
func (*Broker) Name() string { return "kfake-broker" }

// Bind implements app.Service.
func (b *Broker) Bind(l *config.Loader) {
	l.String(&b.Addr, "broker-addr", "WAITQ_BROKER_ADDR", "0.0.0.0:9092", "Kafka protocol listen address")
	l.String(&b.Advertise, "broker-advertise", "WAITQ_BROKER_ADVERTISE", "", "host:port clients are told to reach the broker at (empty: the listen address)")
	l.String(&b.DataDir, "kafka-data-dir", "WAITQ_KAFKA_DATA_DIR", "", "directory where the broker keeps its log, so a restart keeps it (empty: memory only)")
	l.Duration(&b.MinSessionTimeout, "group-min-session-timeout", "WAITQ_GROUP_MIN_SESSION_TIMEOUT", 6*time.Second, "shortest consumer-group session timeout a member may ask for")
}

// Validate implements app.Service.
func (b *Broker) Validate() error {
	_, p, err := net.SplitHostPort(b.Addr)
	if err != nil {
		return fmt.Errorf("WAITQ_BROKER_ADDR=%q: %w", b.Addr, err)
	}
	if port, err := strconv.Atoi(p); err != nil || port <= 0 {
		return fmt.Errorf("WAITQ_BROKER_ADDR=%q needs a fixed port: it is told to every client", b.Addr)
	}
	if b.Advertise != "" {
		if _, _, err := net.SplitHostPort(b.Advertise); err != nil {
			return fmt.Errorf("WAITQ_BROKER_ADVERTISE=%q: %w", b.Advertise, err)
		}
	}
	if b.MinSessionTimeout <= 0 {
		return fmt.Errorf("WAITQ_GROUP_MIN_SESSION_TIMEOUT must be positive")
	}
	return nil
}

// Run implements app.Service.
func (b *Broker) Run(ctx context.Context, log *slog.Logger) error {
	c, err := StartKafka(KafkaOptions{Addr: b.Addr, Advertise: b.Advertise, DataDir: b.DataDir, MinSessionTimeout: b.MinSessionTimeout})
	if err != nil {
		return err
	}
	log.Info("listening", "addr", b.Addr, "advertised", c.ListenAddrs(), "dataDir", b.DataDir)
	<-ctx.Done()
	c.Close() // persists the log to DataDir
	return nil
}
