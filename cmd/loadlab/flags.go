package main

import (
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/loadlab/loadlab/internal/report"

	"github.com/spf13/pflag"

	"github.com/loadlab/loadlab/internal/httpx"
	"github.com/loadlab/loadlab/internal/quantity"
	"github.com/loadlab/loadlab/internal/secret"
)

// The flag types below validate a value once, when the command line is
// parsed, so that what the command reads is already right. Their errors are
// flagValueErrors: the command's flag error handler shows them as they are
// ("run: -n must be positive, got 0"), while a value that is not of the
// flag's kind at all ("-d 30") keeps pflag's wording through plainFlagError.
// Type() names the kind as pflag's own types do, so --help is unchanged.

// Run's typed flags hold their refusals back (refusals.hold) until the
// command has its whole command line: that a flag is for quick mode only,
// or that a plan and --url are not both given, says more than what is
// wrong with the flag's value.

// refusals are the flag values a command refused, in command-line order.
type refusals struct{ list []refusal }

type refusal struct {
	flag string
	err  error
}

// hold wraps a typed flag so that it records a refusal of its value
// instead of failing the parse. A value not of the flag's kind ("-c abc")
// still fails it, as pflag's own flags do.
func (r *refusals) hold(name string, v pflag.Value) pflag.Value {
	return &heldFlag{Value: v, name: name, refusals: r}
}

// refused reports whether the value of the flag named name was refused.
func (r *refusals) refused(name string) bool {
	for _, x := range r.list {
		if x.flag == name {
			return true
		}
	}
	return false
}

// err is the refusal to report, nil if none: --url's first, as the URL is
// what everything else is about, then the first given.
func (r *refusals) err() error {
	for _, x := range r.list {
		if x.flag == "url" {
			return x.err
		}
	}
	if len(r.list) > 0 {
		return r.list[0].err
	}
	return nil
}

type heldFlag struct {
	pflag.Value
	name     string
	refusals *refusals
}

func (f *heldFlag) Set(s string) error {
	err := f.Value.Set(s)
	if fe := (*flagValueError)(nil); errors.As(err, &fe) {
		f.refusals.list = append(f.refusals.list, refusal{f.name, fe})
		return nil
	}
	return err
}

// flagValueError is a flag value of the right kind that loadlab refuses.
type flagValueError struct{ err error }

func (e *flagValueError) Error() string { return e.err.Error() }
func (e *flagValueError) Unwrap() error { return e.err }

func refuse(format string, args ...any) error {
	return &flagValueError{fmt.Errorf(format, args...)}
}

// countFlag is a whole number that must be positive (-c, -n) or, with
// zeroOK, not negative (--workers). shown names the flag in errors.
type countFlag[T int | int64] struct {
	value  *T
	shown  string
	zeroOK bool
}

var (
	_ pflag.Value = (*countFlag[int])(nil)
	_ pflag.Value = (*durationFlag)(nil)
	_ pflag.Value = (*sizeFlag)(nil)
	_ pflag.Value = (*rateFlag)(nil)
	_ pflag.Value = (*urlFlag)(nil)
	_ pflag.Value = (*headerFlag)(nil)
	_ pflag.Value = (*methodFlag)(nil)
	_ pflag.Value = (*heldFlag)(nil)
)

func (f *countFlag[T]) Set(s string) error {
	n, err := strconv.ParseInt(s, 0, 64)
	if err == nil && int64(T(n)) != n {
		err = &strconv.NumError{Func: "ParseInt", Num: s, Err: strconv.ErrRange}
	}
	if err != nil {
		return err // pflag's own wording, which plainFlagError explains
	}
	switch {
	case f.zeroOK && n < 0:
		return refuse("%s must not be negative, got %d", f.shown, n)
	case !f.zeroOK && n <= 0:
		return refuse("%s must be positive, got %d", f.shown, n)
	}
	*f.value = T(n)
	return nil
}

func (f *countFlag[T]) String() string { return strconv.FormatInt(int64(*f.value), 10) }
func (f *countFlag[T]) Type() string   { return "int" }

// durationFlag is a duration that must be positive (-d, --timeout) or, with
// zeroOK, not negative (--grace).
type durationFlag struct {
	value  *time.Duration
	shown  string
	zeroOK bool
}

func (f *durationFlag) Set(s string) error {
	d, err := time.ParseDuration(s)
	if err != nil {
		return err // "time: invalid duration", which plainFlagError explains
	}
	switch {
	case f.zeroOK && d < 0:
		return refuse("%s must not be negative, got %v", f.shown, d)
	case !f.zeroOK && d <= 0:
		return refuse("%s must be positive, got %v", f.shown, d)
	}
	*f.value = d
	return nil
}

// String is "0" for no duration, which --help takes for "no default".
func (f *durationFlag) String() string {
	if *f.value == 0 {
		return "0"
	}
	return f.value.String()
}

func (f *durationFlag) Type() string { return "duration" }

// sizeFlag is a byte size ("16MiB") between min and max; hint, if set,
// says the range in errors.
type sizeFlag struct {
	value    *int64
	text     string // as given, or the default
	shown    string
	min, max int64
	hint     string
}

func newSizeFlag(value *int64, def, shown string, min, max int64, hint string) *sizeFlag {
	n, err := quantity.ParseBytes(def)
	if err != nil {
		panic(fmt.Sprintf("default %s %q: %v", shown, def, err)) // a programming error
	}
	*value = n
	return &sizeFlag{value: value, text: def, shown: shown, min: min, max: max, hint: hint}
}

func (f *sizeFlag) Set(s string) error {
	n, err := quantity.ParseBytes(s)
	if err != nil || n < f.min || n > f.max {
		return refuse("%s: bad size %q%s", f.shown, s, f.hint)
	}
	*f.value, f.text = n, s
	return nil
}

func (f *sizeFlag) String() string { return f.text }
func (f *sizeFlag) Type() string   { return "string" }

// rateFlag is an open load's rate: "2000/s", "7000/10m".
type rateFlag struct {
	rate *quantity.Rate // nil until given
	text string
}

func (f *rateFlag) Set(s string) error {
	r, err := quantity.ParseRate(s)
	if err != nil {
		return &flagValueError{fmt.Errorf("--rate: %w", err)}
	}
	f.rate, f.text = &r, s
	return nil
}

func (f *rateFlag) String() string { return f.text }
func (f *rateFlag) Type() string   { return "string" }

// urlFlag is the URL quick mode loads: http or https, with a host and a
// valid port. shown is the URL as errors and results say it, without a
// password.
type urlFlag struct {
	url   *url.URL // nil until given
	shown string
}

func (f *urlFlag) Set(s string) error {
	if s == "" {
		f.url, f.shown = nil, "" // as if not given
		return nil
	}
	if !strings.Contains(s, "://") {
		return refuse("bad --url %q: it needs a scheme, as in http://%s", s, s)
	}
	u, err := url.Parse(s)
	if err != nil {
		// url.Error quotes the URL whole, password and all: say it without
		// its user info.
		if ue := (*url.Error)(nil); errors.As(err, &ue) {
			err = ue.Err
		}
		return refuse("bad --url %q: %w", withoutUserinfo(s), err)
	}
	shown := u.Redacted()
	if u.User != nil {
		bare := *u
		bare.User = nil
		shown = bare.String()
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return refuse("bad --url %q: the scheme must be http or https", shown)
	}
	if u.Host == "" || u.Hostname() == "" {
		return refuse("bad --url %q: no host", shown)
	}
	if p := u.Port(); p != "" {
		if n, err := parsePort(p); err != nil || n == 0 {
			return refuse("bad --url %q: bad port %q", shown, p)
		}
	}
	// Credentials in the query string (?api_key=...) are sent, not shown.
	f.url, f.shown = u, secret.URL(shown)
	return nil
}

// withoutUserinfo is a URL, maybe one url.Parse refuses, without the user
// and password before its host's @.
func withoutUserinfo(s string) string {
	scheme, rest, ok := strings.Cut(s, "://")
	if !ok {
		return s
	}
	end := strings.IndexAny(rest, "/?#")
	if end < 0 {
		end = len(rest)
	}
	if at := strings.LastIndex(rest[:end], "@"); at >= 0 {
		rest = rest[at+1:]
	}
	return scheme + "://" + rest
}

func (f *urlFlag) String() string { return f.shown }
func (f *urlFlag) Type() string   { return "string" }

// methodFlag is the request method of -X, upper-cased ("post" is POST).
type methodFlag struct{ method string }

func (f *methodFlag) Set(s string) error {
	m := strings.ToUpper(s)
	if err := httpx.CheckMethod(m); err != nil {
		return refuse("-X: %w", err)
	}
	f.method = m
	return nil
}

func (f *methodFlag) String() string { return f.method }
func (f *methodFlag) Type() string   { return "string" }

// headerFlag is the request headers of -H 'Name: value', repeatable, each
// checked as httpx will send it.
type headerFlag struct {
	headers []httpx.Header
}

func (f *headerFlag) Set(s string) error {
	name, value, ok := strings.Cut(s, ":")
	if !ok {
		return refuse("-H %q: want 'Name: value'", s)
	}
	name, value = strings.TrimSpace(name), strings.TrimSpace(value)
	if err := httpx.CheckHeader(name, value); err != nil {
		return refuse("-H: %w", err)
	}
	f.headers = append(f.headers, httpx.Header{Name: name, Value: value})
	return nil
}

// String lists the headers as pflag's string arrays do; "" when there are
// none, which --help takes for "no default".
func (f *headerFlag) String() string {
	if len(f.headers) == 0 {
		return ""
	}
	shown := make([]string, len(f.headers))
	for i, h := range f.headers {
		shown[i] = h.Name + ": " + h.Value
	}
	return "[" + strings.Join(shown, ",") + "]"
}

func (f *headerFlag) Type() string { return "stringArray" }

// summaryFlag is --summary: compact (the answer first, the default) or
// full (every figure's table, per step too).
type summaryFlag struct{ form string }

func (f *summaryFlag) Set(s string) error {
	if s != report.SummaryCompact && s != report.SummaryFull {
		return &flagValueError{fmt.Errorf("--summary %q: want compact or full", s)}
	}
	f.form = s
	return nil
}

func (f *summaryFlag) String() string {
	if f.form == "" {
		return report.SummaryCompact
	}
	return f.form
}
func (f *summaryFlag) Type() string { return "compact|full" }

// full reports whether --summary full was asked for.
func (f *summaryFlag) full() bool { return f.form == report.SummaryFull }

// summaryUsage is --summary's help.
const summaryUsage = "an experiment's summary: compact (the recommendation, one table of the points, validity in a line) or full (every figure's table, per step too)"
