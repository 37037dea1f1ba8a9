package stack

import (
	"cmp"
	"fmt"
	"net"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
)

// KafkaOptions configure a kfake cluster started by StartKafka.
type KafkaOptions struct {
	// Brokers is the number of brokers (0: one). Several brokers lead an
	// event's partitions in turn, so a client must find each partition's
	// leader, as against a real cluster.
	Brokers int
	// Addr is the listen address of the one broker (empty: a free port on
	// 127.0.0.1). A fixed port is what the broker tells its clients.
	Addr string
	// Advertise is the host:port clients are told to reach the one broker
	// at (empty: the address it listens on).
	Advertise string
	// DataDir is where the cluster keeps its log, written at Close and read
	// at start (empty: memory only).
	DataDir string
	// MinSessionTimeout is the shortest consumer-group session timeout a
	// member may ask for (0: kfake's default).
	MinSessionTimeout time.Duration
	// Opts are further kfake options, applied after those above.
	Opts []kfake.Opt
}

// StartKafka starts a kfake cluster in this process; Close stops it (and
// persists its log to DataDir).
func StartKafka(o KafkaOptions) (*kfake.Cluster, error) {
	opts := []kfake.Opt{kfake.NumBrokers(max(o.Brokers, 1))}
	if o.Addr != "" {
		if o.Brokers > 1 {
			return nil, fmt.Errorf("kafka broker (kfake) on %s: one address for %d brokers", o.Addr, o.Brokers)
		}
		_, p, err := net.SplitHostPort(o.Addr)
		if err != nil {
			return nil, fmt.Errorf("kafka broker (kfake) on %s: %w", o.Addr, err)
		}
		port, err := net.LookupPort("tcp", p)
		if err != nil {
			return nil, fmt.Errorf("kafka broker (kfake) on %s: %w", o.Addr, err)
		}
		opts = append(opts, kfake.Ports(port), kfake.ListenFn(func(network, _ string) (net.Listener, error) {
			ln, err := net.Listen(network, o.Addr)
			if err != nil || o.Advertise == "" {
				return ln, err
			}
			return advertised{ln, o.Advertise}, nil
		}))
	}
	if o.DataDir != "" {
		opts = append(opts, kfake.DataDir(o.DataDir))
	}
	if o.MinSessionTimeout > 0 {
		opts = append(opts, kfake.GroupMinSessionTimeout(o.MinSessionTimeout))
	}
	c, err := kfake.NewCluster(append(opts, o.Opts...)...)
	if err != nil {
		return nil, fmt.Errorf("kafka broker (kfake) on %s: %w", cmp.Or(o.Addr, "127.0.0.1:0"), err)
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
