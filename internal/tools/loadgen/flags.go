package loadgen

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/waitq/waitq/internal/redisstore"
	"github.com/waitq/waitq/internal/tools/loadgen/report"
)

// Bounds of the settings more than one measurement has.
const (
	maxDuration    = 120 * time.Second
	maxRequests    = 5_000_000
	maxConcurrency = 1024
	// maxRounds bounds -rounds, of ingest and cost: how many times a
	// measurement and its baseline are taken, alternating.
	maxRounds = 9
)

// config is the settings of one measurement: a struct whose fields its
// flags are read into, and the settings line they were read as.
type config interface {
	// bind declares the flags on s, each with its bounds.
	bind(s *settings)
	// line returns the settings line the flags were read as (shown).
	line() string
	setLine(line string)
}

// shown is the settings line of a config, kept for its report; a config
// embeds it.
type shown struct{ text string }

// line returns the settings line, as the table's head printed it.
func (s *shown) line() string { return s.text }

func (s *shown) setLine(line string) { s.text = line }

// settings are the flags of one command, each declared once: bound to its
// field, checked against its bounds and shown in the settings line, in the
// order declared.
type settings struct {
	fs     *flag.FlagSet
	parts  []part
	checks []func() error
}

// part is one flag's text in the settings line.
type part struct {
	name string
	text func() string
}

// show puts -name and its value in the settings line.
func (s *settings) show(name string) {
	s.showAs(name, func() string { return "-" + name + " " + s.fs.Lookup(name).Value.String() })
}

// showAs puts text in the settings line for -name, in place of its value
// when it is there already.
func (s *settings) showAs(name string, text func() string) {
	for i := range s.parts {
		if s.parts[i].name == name {
			s.parts[i].text = text
			return
		}
	}
	s.parts = append(s.parts, part{name, text})
}

// check adds a check of the parsed flags, run after those declared before.
func (s *settings) check(f func() error) { s.checks = append(s.checks, f) }

// intVar declares -name, an int from lo to hi.
func (s *settings) intVar(p *int, name string, def, lo, hi int, usage string) {
	s.fs.IntVar(p, name, def, usage)
	s.show(name)
	s.check(func() error { return between(name, *p, lo, hi) })
}

// int64Var declares -name, an int64 from lo to hi.
func (s *settings) int64Var(p *int64, name string, def, lo, hi int64, usage string) {
	s.fs.Int64Var(p, name, def, usage)
	s.show(name)
	s.check(func() error { return between(name, *p, lo, hi) })
}

// between checks that -name's v is from lo to hi.
func between[T int | int64](name string, v, lo, hi T) error {
	if v < lo || v > hi {
		return fmt.Errorf("-%s %d: must be between %d and %d", name, v, lo, hi)
	}
	return nil
}

// durVar declares -name, a duration from lo to hi, given as the text the
// error names them by ("0", "5m").
func (s *settings) durVar(p *time.Duration, name string, def time.Duration, lo, hi, usage string) {
	s.fs.DurationVar(p, name, def, usage)
	s.show(name)
	s.check(func() error {
		if *p < parseBound(lo) || *p > parseBound(hi) {
			return fmt.Errorf("-%s %s: must be between %s and %s", name, *p, lo, hi)
		}
		return nil
	})
}

// parseBound reads the text of a bound of durVar, "0" included.
func parseBound(text string) time.Duration {
	d, err := time.ParseDuration(text)
	if err != nil {
		panic("loadgen: a duration bound " + text)
	}
	return d
}

// durMax declares -name, a positive duration of at most hi.
func (s *settings) durMax(p *time.Duration, name string, def, hi time.Duration, usage string) {
	s.fs.DurationVar(p, name, def, usage)
	s.show(name)
	s.check(func() error {
		if *p <= 0 || *p > hi {
			return fmt.Errorf("-%s %s: must be positive and at most %s", name, *p, hi)
		}
		return nil
	})
}

// oneOf declares -name, one of choices, the first its default.
func (s *settings) oneOf(p *string, name, usage string, choices ...string) {
	s.fs.StringVar(p, name, choices[0], usage)
	s.show(name)
	s.check(func() error {
		if slices.Contains(choices, *p) {
			return nil
		}
		return fmt.Errorf("-%s %q: must be %s", name, *p, strings.Join(choices, " or "))
	})
}

// boolVar declares -name, shown as -name=value.
func (s *settings) boolVar(p *bool, name string, def bool, usage string) {
	s.fs.BoolVar(p, name, def, usage)
	s.showAs(name, func() string { return fmt.Sprintf("-%s=%t", name, *p) })
}

// redis declares -redis, the Redis a measurement runs in (required; what
// it is for names it in the error), checked as the services check
// conn(): the URL, or with a cluster's seeds its options.
func (s *settings) redis(p *string, what, usage string, conn func() redisstore.Conn) {
	s.fs.StringVar(p, "redis", "", usage)
	s.check(func() error {
		if *p == "" {
			return fmt.Errorf("-redis: required, the Redis %s (redis://HOST:PORT/0)", what)
		}
		if err := conn().Validate(); err != nil {
			return fmt.Errorf("-redis %q: %w", *p, err)
		}
		return nil
	})
}

// line returns the settings line.
func (s *settings) line() string {
	texts := make([]string, len(s.parts))
	for i, p := range s.parts {
		texts[i] = p.text()
	}
	return strings.Join(texts, " ")
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

// parseFlags reads the flags of "loadgen <command>" from args into c,
// checks them and keeps the settings line in c. It returns false when the
// run ends there: with nil when -h asked for the flags' help (printed to
// stderr), else with what is wrong with the flags.
func parseFlags(command string, c config, args []string, stderr io.Writer) (bool, error) {
	s := &settings{fs: flag.NewFlagSet("loadgen "+command, flag.ContinueOnError)}
	s.fs.SetOutput(stderr)
	c.bind(s)
	err := s.fs.Parse(args)
	if err == nil && s.fs.NArg() > 0 {
		err = fmt.Errorf("unexpected arguments %q", s.fs.Args())
	}
	if err == nil {
		var errs []error
		for _, f := range s.checks {
			errs = append(errs, f())
		}
		err = errors.Join(errs...)
	}
	if errors.Is(err, flag.ErrHelp) {
		return false, nil
	}
	c.setLine(s.line())
	return err == nil, err
}
