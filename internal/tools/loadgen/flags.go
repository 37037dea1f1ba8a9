package loadgen

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/waitq/waitq/internal/tools/loadgen/report"
)

// Bounds of the settings more than one measurement has.
const (
	maxDuration    = 120 * time.Second
	maxRequests    = 5_000_000
	maxConcurrency = 1024
)

// clusterFlagUsage is the usage of -redis-cluster, a flag of the measurements
// whose figures are compared between one Redis and a cluster.
const clusterFlagUsage = "run against a Redis Cluster of three masters (redis-server children, redis-cli --cluster create) instead of one redis-server"

// loadFlagErrors checks the -c and -d flags that joins, lag and guard share.
func loadFlagErrors(concurrency int, duration time.Duration) []error {
	var errs []error
	if concurrency < 1 || concurrency > maxConcurrency {
		errs = append(errs, fmt.Errorf("-c %d: must be between 1 and %d", concurrency, maxConcurrency))
	}
	if duration <= 0 || duration > maxDuration {
		errs = append(errs, fmt.Errorf("-d %s: must be positive and at most %s", duration, maxDuration))
	}
	return errs
}

// warmedFlagErrors is loadFlagErrors for a measurement with a warm-up and a
// request bound (-warmup, -n).
func warmedFlagErrors(concurrency int, duration, warmup time.Duration, maxReqs int64) []error {
	errs := loadFlagErrors(concurrency, duration)
	if warmup < 0 || warmup > maxDuration {
		errs = append(errs, fmt.Errorf("-warmup %s: must be between 0 and %s", warmup, maxDuration))
	}
	if maxReqs < 1 || maxReqs > maxRequests {
		errs = append(errs, fmt.Errorf("-n %d: must be between 1 and %d", maxReqs, maxRequests))
	}
	return errs
}

// config is the settings of one measurement, read from its flags.
type config interface {
	// bind declares the flags on fs.
	bind(fs *flag.FlagSet)
	// validate checks the parsed flags.
	validate() error
	// line returns the settings line of the table, after its label.
	line() string
}

// begin reads the flags of "loadgen <command>" from args into c (parseFlags)
// and prints the head of the command's table to stdout: the machine and the
// settings. It returns false when the run ends there: with nil when -h asked
// for the flags' help (printed to stderr), else with what is wrong with the
// flags.
func begin(command string, c config, args []string, stdout, stderr io.Writer) (bool, error) {
	if ok, err := parseFlags(command, c, args, stderr); !ok {
		return false, err
	}
	report.Machine(stdout, command)
	fmt.Fprintf(stdout, "settings %s\n", c.line())
	return true, nil
}

// parseFlags reads the flags of "loadgen <command>" from args into c and
// validates them. It returns false when the run ends there: with nil when
// -h asked for the flags' help (printed to stderr), else with what is
// wrong with the flags.
func parseFlags(command string, c config, args []string, stderr io.Writer) (bool, error) {
	fs := flag.NewFlagSet("loadgen "+command, flag.ContinueOnError)
	fs.SetOutput(stderr)
	c.bind(fs)
	err := fs.Parse(args)
	if err == nil && fs.NArg() > 0 {
		err = fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if err == nil {
		err = c.validate()
	}
	if errors.Is(err, flag.ErrHelp) {
		return false, nil
	}
	return err == nil, err
}
