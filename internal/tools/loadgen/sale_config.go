package loadgen

import (
	"errors"
	"flag"
	"fmt"
	"time"

	"github.com/waitq/waitq/internal/redisstore"
)

// Bounds of "loadgen sale".
const (
	maxSaleJoins    = 20_000_000
	maxSaleGateways = 64
	maxSaleTimeout  = time.Hour
)

// saleConfig are the settings of "loadgen sale".
type saleConfig struct {
	redisURL string
	joins    int
	gateways int
	rate     int           // admissions a minute
	interval time.Duration // the gateways' status interval
	batch    int           // joins per Store.Ingest call
	timeout  time.Duration
}

// bind declares the sale flags.
func (c *saleConfig) bind(fs *flag.FlagSet) {
	fs.StringVar(&c.redisURL, "redis", "", "the Redis to run the sale in, redis://HOST:PORT/0 (required)")
	fs.IntVar(&c.joins, "joins", 1_000_000, fmt.Sprintf("people who join the one event, as fast as the ingest path takes them (1 to %d)", maxSaleJoins))
	fs.IntVar(&c.gateways, "gateways", 4, fmt.Sprintf("simulated gateways sharing the people's sockets, each with its own status rounds (1 to %d)", maxSaleGateways))
	fs.IntVar(&c.rate, "rate", 600_000, "admissions a minute (the event's admitPerMinute)")
	fs.DurationVar(&c.interval, "interval", 5*time.Second, "the gateways' status interval (WAITQ_STATUS_INTERVAL)")
	fs.IntVar(&c.batch, "batch", 500, "joins per Store.Ingest call (the ingest consumer's default MaxBatch)")
	fs.DurationVar(&c.timeout, "timeout", 20*time.Minute, "the longest the sale may take, drain included")
}

// validate checks the sale flags.
func (c *saleConfig) validate() error {
	var errs []error
	if c.redisURL == "" {
		errs = append(errs, errors.New("-redis: required, the Redis to run the sale in (redis://HOST:PORT/0)"))
	} else if err := (redisstore.Conn{URL: c.redisURL}).Validate(); err != nil {
		errs = append(errs, fmt.Errorf("-redis %q: %w", c.redisURL, err))
	}
	if c.joins < 1 || c.joins > maxSaleJoins {
		errs = append(errs, fmt.Errorf("-joins %d: must be between 1 and %d", c.joins, maxSaleJoins))
	}
	if c.gateways < 1 || c.gateways > maxSaleGateways {
		errs = append(errs, fmt.Errorf("-gateways %d: must be between 1 and %d", c.gateways, maxSaleGateways))
	}
	if c.rate < 1 {
		errs = append(errs, fmt.Errorf("-rate %d: must be at least 1", c.rate))
	}
	if c.interval < 100*time.Millisecond || c.interval > time.Minute {
		errs = append(errs, fmt.Errorf("-interval %s: must be between 100ms and 1m", c.interval))
	}
	if c.batch < 1 || c.batch > maxIngestBatch {
		errs = append(errs, fmt.Errorf("-batch %d: must be between 1 and %d", c.batch, maxIngestBatch))
	}
	if c.timeout <= 0 || c.timeout > maxSaleTimeout {
		errs = append(errs, fmt.Errorf("-timeout %s: must be positive and at most %s", c.timeout, maxSaleTimeout))
	}
	return errors.Join(errs...)
}

// saleResult is what one sale measured.
type saleResult struct {
	joins, gateways         int
	joinWall, wall          time.Duration // the joins' wall time; the whole sale's, drain included
	redisCPU                time.Duration
	inLineP99, firstToldP99 time.Duration // join stamp → in Redis; → first status with a place
	gapP99, gapMax          time.Duration // between two statuses of a waiting user
	readP99                 time.Duration // a slice's read
	statuses                int64
	admitted, admittedTotal int64 // told admitted; the event's counter
	waitingLeft, lost       int64
	rises                   int64 // statuses whose position was above the user's previous one: someone joined ahead (a stamp equal or earlier)
}

// String is the sale's report.
func (r saleResult) String() string {
	drained := "yes"
	if r.waitingLeft > 0 || r.lost > 0 || r.admittedTotal != int64(r.joins) {
		drained = "NO"
	}
	return fmt.Sprintf(`sale: joins=%d gateways=%d
  joins: %.0f/s over %.1fs; join → in line p99 %s; join → first status with a place p99 %s
  statuses: %d; gap between a waiting user's statuses p99 %s (max %s); a slice's read p99 %s; positions that went up (a join stamped at or before theirs came in ahead) %d
  Redis: %.1f%% of one core over the sale (%.1fs of CPU in %.1fs)
  drained: %s (admittedTotal %d, told admitted %d, still waiting %d, joins neither admitted nor waiting %d)`,
		r.joins, r.gateways,
		float64(r.joins)/r.joinWall.Seconds(), r.joinWall.Seconds(), r.inLineP99, r.firstToldP99,
		r.statuses, r.gapP99, r.gapMax, r.readP99, r.rises,
		100*r.redisCPU.Seconds()/r.wall.Seconds(), r.redisCPU.Seconds(), r.wall.Seconds(),
		drained, r.admittedTotal, r.admitted, r.waitingLeft, r.lost)
}

// line returns the settings, for the progress lines.
func (c *saleConfig) line() string {
	return fmt.Sprintf("-joins %d -gateways %d -rate %d -interval %s -batch %d -timeout %s", c.joins, c.gateways, c.rate, c.interval, c.batch, c.timeout)
}
