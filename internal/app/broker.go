package app

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"

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

	port int
}

var _ Service = (*Broker)(nil)

// Name implements Service.
func (*Broker) Name() string { return "kfake-broker" }

// Bind implements Service.
func (b *Broker) Bind(l *config.Loader) {
	l.String(&b.Addr, "broker-addr", "WAITQ_BROKER_ADDR", "0.0.0.0:9092", "Kafka protocol listen address")
	l.String(&b.Advertise, "broker-advertise", "WAITQ_BROKER_ADVERTISE", "", "host:port clients are told to reach the broker at (empty: the listen address)")
	l.String(&b.DataDir, "kafka-data-dir", "WAITQ_KAFKA_DATA_DIR", "", "directory where the broker keeps its log, so a restart keeps it (empty: memory only)")
	l.Duration(&b.MinSessionTimeout, "group-min-session-timeout", "WAITQ_GROUP_MIN_SESSION_TIMEOUT", 6*time.Second, "shortest consumer-group session timeout a member may ask for")
}

// Validate implements Service.
func (b *Broker) Validate() error {
	_, p, err := net.SplitHostPort(b.Addr)
	if err != nil {
		return fmt.Errorf("WAITQ_BROKER_ADDR=%q: %w", b.Addr, err)
	}
	if b.port, err = strconv.Atoi(p); err != nil || b.port <= 0 {
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

// Run implements Service.
func (b *Broker) Run(ctx context.Context, log *slog.Logger) error {
	c, err := startKfake(b.Addr, b.Advertise, b.DataDir, b.port, kfake.GroupMinSessionTimeout(b.MinSessionTimeout))
	if err != nil {
		return err
	}
	log.Info("listening", "addr", b.Addr, "advertised", c.ListenAddrs(), "dataDir", b.DataDir)
	<-ctx.Done()
	c.Close() // persists the log to DataDir
	return nil
}

// startKfake starts a one-broker kfake cluster listening on addr (port 0:
// any free one) and advertising advertise (empty: the address it listens
// on), keeping its log in dataDir when that is set.
func startKfake(addr, advertise, dataDir string, port int, opts ...kfake.Opt) (*kfake.Cluster, error) {
	opts = append([]kfake.Opt{
		kfake.NumBrokers(1),
		kfake.Ports(port),
		kfake.ListenFn(func(network, _ string) (net.Listener, error) {
			ln, err := net.Listen(network, addr)
			if err != nil || advertise == "" {
				return ln, err
			}
			return advertised{ln, advertise}, nil
		}),
	}, opts...)
	if dataDir != "" {
		opts = append(opts, kfake.DataDir(dataDir))
	}
	c, err := kfake.NewCluster(opts...)
	if err != nil {
		return nil, fmt.Errorf("kafka broker (kfake) on %s: %w", addr, err)
	}
	return c, nil
}

// advertised is a listener that names itself by the address clients are to
// dial: kfake tells clients its listener's address.
type advertised struct {
	net.Listener
	as string
}

func (a advertised) Addr() net.Addr { return hostPort(a.as) }

// hostPort is a net.Addr given as text.
type hostPort string

func (hostPort) Network() string  { return "tcp" }
func (h hostPort) String() string { return string(h) }
