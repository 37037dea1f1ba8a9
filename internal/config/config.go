// Package config binds every setting to a command-line flag and a WAITQ_…
// environment variable (the flag wins), and prints the result with secrets
// masked. A Loader is used from one goroutine.
//
// A setting is written once, in the Config of the package that uses it
// (gateway.Config, producer.Config, guard.Config, kafkajoin.ConsumerConfig,
// ...), next to:
//
//   - DefaultConfig(): the value of every setting when nothing is
//     configured;
//   - withDefaults(): cmp.Or for each setting whose zero means "the
//     default", applied by the package's constructor;
//   - Validate(): every rule a value must meet. It names a bad setting by
//     its WAITQ_… variable (each field's comment names it too), so that an
//     operator reads the name they set; the package's callers in Go read
//     the same name.
//
// Constructors have one shape, New(cfg Config, deps Deps) (*T, error): they
// fill cfg's zero settings from DefaultConfig and return Validate's error.
//
// A program (internal/app) starts from DefaultConfig and binds a flag and
// a variable straight into each field, with the field's default, in one
// line (l.Duration(&cfg.StatusInterval, "status-interval",
// "WAITQ_STATUS_INTERVAL", def.StatusInterval, "…")); it then calls the
// Config's Validate on the values as parsed, before any default fills a
// zero, so a zero set on purpose is refused where the package would read it
// as "the default". The Loader itself names its variable in a value that
// does not parse. A new setting is its field (with its default and rule),
// one binding line, and its row in docs/configuration.md.
package config

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Loader collects the settings of one program.
type Loader struct {
	fs     *flag.FlagSet
	getenv func(string) string
	errs   []error
	vars   []Var
}

// Var describes one setting, for help and documentation.
type Var struct {
	Flag, Env, Default, Usage string
	Secret                    bool
	url                       bool // logged with its password redacted
	value                     flag.Value
}

// NewLoader returns a Loader for program name reading the environment through
// getenv.
func NewLoader(name string, getenv func(string) string) *Loader {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	return &Loader{fs: fs, getenv: getenv}
}

// Vars lists the settings bound so far.
func (l *Loader) Vars() []Var { return l.vars }

func (l *Loader) bind(v flag.Value, name, env, def, usage string, secret bool) {
	if s := l.getenv(env); s != "" {
		if err := v.Set(s); err != nil {
			l.errs = append(l.errs, fmt.Errorf("%s=%q: %w", env, s, err))
		}
	}
	l.fs.Var(v, name, usage+" (env "+env+")")
	l.vars = append(l.vars, Var{Flag: name, Env: env, Default: def, Usage: usage, Secret: secret, value: v})
}

// String binds a string setting.
func (l *Loader) String(p *string, name, env, def, usage string) {
	*p = def
	l.bind((*stringValue)(p), name, env, def, usage, false)
}

// URL binds a URL setting that may carry a password, which is never
// printed: the logs show the URL with the password redacted.
func (l *Loader) URL(p *string, name, env, def, usage string) {
	*p = def
	l.bind((*stringValue)(p), name, env, def, usage, false)
	l.vars[len(l.vars)-1].url = true
}

// Secret binds a string setting that is never printed.
func (l *Loader) Secret(p *string, name, env, usage string) {
	l.bind((*stringValue)(p), name, env, "", usage, true)
}

// List binds a comma-separated list.
func (l *Loader) List(p *[]string, name, env, def, usage string) {
	*p = splitList(def)
	l.bind((*listValue)(p), name, env, def, usage, false)
}

// Duration binds a duration in Go syntax (250ms, 5s).
func (l *Loader) Duration(p *time.Duration, name, env string, def time.Duration, usage string) {
	*p = def
	l.bind((*durationValue)(p), name, env, def.String(), usage, false)
}

// Int binds an integer setting.
func (l *Loader) Int(p *int, name, env string, def int, usage string) {
	*p = def
	l.bind((*intValue)(p), name, env, strconv.Itoa(def), usage, false)
}

// Float binds a decimal number.
func (l *Loader) Float(p *float64, name, env string, def float64, usage string) {
	*p = def
	l.bind((*floatValue)(p), name, env, strconv.FormatFloat(def, 'g', -1, 64), usage, false)
}

// Bool binds a boolean setting.
func (l *Loader) Bool(p *bool, name, env string, def bool, usage string) {
	*p = def
	l.bind((*boolValue)(p), name, env, strconv.FormatBool(def), usage, false)
}

// Parse applies args over the environment and reports every bad value.
func (l *Loader) Parse(args []string) error {
	if err := l.fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		l.errs = append(l.errs, err)
	}
	if l.fs.NArg() > 0 {
		l.errs = append(l.errs, fmt.Errorf("unexpected arguments %q", l.fs.Args()))
	}
	return errors.Join(l.errs...)
}

// Usage writes every setting with its flag, variable and default.
func (l *Loader) Usage(w io.Writer) {
	fmt.Fprintf(w, "Usage of %s (every flag may also be set by its environment variable):\n", l.fs.Name())
	for _, v := range l.vars {
		fmt.Fprintf(w, "  -%s, %s (default %q)\n      %s\n", v.Flag, v.Env, v.Default, v.Usage)
	}
}

// LogAttrs returns the effective settings as slog key/value pairs, secrets
// masked.
func (l *Loader) LogAttrs() []any {
	out := make([]any, 0, 2*len(l.vars))
	for _, v := range l.vars {
		val := v.value.String()
		switch {
		case v.Secret:
			val = mask(val)
		case v.url:
			val = redactURL(val)
		}
		out = append(out, v.Env, val)
	}
	return out
}

// redactURL returns s with its password replaced by "xxxxx", or a mark
// when it does not parse (which could put the password anywhere).
func redactURL(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return "(not a URL)"
	}
	return u.Redacted()
}

func mask(s string) string {
	if s == "" {
		return "(unset)"
	}
	return "(set)"
}

func splitList(s string) []string {
	var out []string
	for _, x := range strings.Split(s, ",") {
		if x = strings.TrimSpace(x); x != "" {
			out = append(out, x)
		}
	}
	return out
}

type stringValue string

func (v *stringValue) Set(s string) error { *v = stringValue(s); return nil }
func (v *stringValue) String() string     { return string(*v) }

type listValue []string

func (v *listValue) Set(s string) error { *v = splitList(s); return nil }
func (v *listValue) String() string     { return strings.Join(*v, ",") }

type durationValue time.Duration

func (v *durationValue) Set(s string) error {
	d, err := time.ParseDuration(s)
	if err != nil {
		return errors.New("not a duration (use Go syntax such as 250ms or 5s)")
	}
	*v = durationValue(d)
	return nil
}
func (v *durationValue) String() string { return time.Duration(*v).String() }

type intValue int

func (v *intValue) Set(s string) error {
	n, err := strconv.Atoi(s)
	if err != nil {
		return errors.New("not an integer")
	}
	*v = intValue(n)
	return nil
}
func (v *intValue) String() string { return strconv.Itoa(int(*v)) }

type floatValue float64

func (v *floatValue) Set(s string) error {
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return errors.New("not a number")
	}
	*v = floatValue(f)
	return nil
}
func (v *floatValue) String() string { return strconv.FormatFloat(float64(*v), 'g', -1, 64) }

type boolValue bool

func (v *boolValue) Set(s string) error {
	b, err := strconv.ParseBool(s)
	if err != nil {
		return errors.New("not a boolean (true or false)")
	}
	*v = boolValue(b)
	return nil
}
func (v *boolValue) String() string   { return strconv.FormatBool(bool(*v)) }
func (v *boolValue) IsBoolFlag() bool { return true }
