package main

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/loadlab/loadlab/internal/httpx"
	"github.com/loadlab/loadlab/internal/quantity"
)

// setCase is one value given to a flag: the String() it leaves, or the
// error it is refused with (refused: a flagValueError, shown as it is;
// otherwise a value not of the flag's kind, worded by plainFlagError).
type setCase struct {
	in      string
	str     string // String() after, when accepted
	err     string // a fragment of the error, when refused
	refused bool
}

// check sets each case on a fresh value from newValue and checks the outcome.
func check(t *testing.T, typ string, newValue func() pflag.Value, cases []setCase, after func(t *testing.T, v pflag.Value, in string)) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.in, func(t *testing.T) {
			v := newValue()
			if v.Type() != typ {
				t.Errorf("Type() %q, want %q", v.Type(), typ)
			}
			err := v.Set(c.in)
			if c.err == "" {
				if err != nil {
					t.Fatalf("Set(%q): %v", c.in, err)
				}
				if got := v.String(); got != c.str {
					t.Errorf("String() %q, want %q", got, c.str)
				}
				if after != nil {
					after(t, v, c.in)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Fatalf("Set(%q) = %v, want an error saying %q", c.in, err, c.err)
			}
			var fe *flagValueError
			if errors.As(err, &fe) != c.refused {
				t.Errorf("Set(%q): a flagValueError is %v, want %v (%v)", c.in, !c.refused, c.refused, err)
			}
		})
	}
}

func TestCountFlag(t *testing.T) {
	t.Parallel()
	var n int64
	check(t, "int", func() pflag.Value { n = 0; return &countFlag[int64]{value: &n, shown: "-n"} }, []setCase{
		{in: "100000", str: "100000"},
		{in: "0x10", str: "16"},
		{in: "0", err: "-n must be positive, got 0", refused: true},
		{in: "-1", err: "-n must be positive, got -1", refused: true},
		{in: "abc", err: `strconv.ParseInt: parsing "abc": invalid syntax`},
		{in: "99999999999999999999", err: "value out of range"},
	}, nil)
	var workers int
	check(t, "int", func() pflag.Value { return &countFlag[int]{value: &workers, shown: "--workers", zeroOK: true} }, []setCase{
		{in: "0", str: "0"},
		{in: "4", str: "4"},
		{in: "-2", err: "--workers must not be negative, got -2", refused: true},
	}, nil)
}

func TestDurationFlag(t *testing.T) {
	t.Parallel()
	var d time.Duration
	check(t, "duration", func() pflag.Value { d = 0; return &durationFlag{value: &d, shown: "-d"} }, []setCase{
		{in: "30s", str: "30s"},
		{in: "1m30s", str: "1m30s"},
		{in: "0s", err: "-d must be positive, got 0s", refused: true},
		{in: "-1s", err: "-d must be positive, got -1s", refused: true},
		{in: "30", err: `time: missing unit in duration "30"`},
	}, nil)
	check(t, "duration", func() pflag.Value { d = 0; return &durationFlag{value: &d, shown: "--grace", zeroOK: true} }, []setCase{
		{in: "0s", str: "0"}, // "0" is how --help knows there is no default
		{in: "500ms", str: "500ms"},
		{in: "-1s", err: "--grace must not be negative, got -1s", refused: true},
	}, nil)
}

func TestSizeFlag(t *testing.T) {
	t.Parallel()
	var n int64
	v := newSizeFlag(&n, "64KiB", "--max-header", 256, 1<<30, " (256B to 1GiB)")
	if n != 64<<10 || v.String() != "64KiB" {
		t.Fatalf("default %d %q", n, v.String())
	}
	check(t, "string", func() pflag.Value { return newSizeFlag(&n, "64KiB", "--max-header", 256, 1<<30, " (256B to 1GiB)") }, []setCase{
		{in: "1MiB", str: "1MiB"},
		{in: "256", str: "256"},
		{in: "255B", err: `--max-header: bad size "255B" (256B to 1GiB)`, refused: true},
		{in: "2GiB", err: `--max-header: bad size "2GiB" (256B to 1GiB)`, refused: true},
		{in: "lots", err: `--max-header: bad size "lots"`, refused: true},
	}, func(t *testing.T, _ pflag.Value, in string) {
		if want, _ := quantity.ParseBytes(in); n != want {
			t.Errorf("value %d, want %d", n, want)
		}
	})
}

func TestRateFlag(t *testing.T) {
	t.Parallel()
	var f *rateFlag
	check(t, "string", func() pflag.Value { f = &rateFlag{}; return f }, []setCase{
		{in: "2000/s", str: "2000/s"},
		{in: "7000/10m", str: "7000/10m"},
		{in: "0/s", err: "--rate: bad rate \"0/s\": the count must be positive", refused: true},
		{in: "5/fortnight", err: "--rate: bad rate", refused: true},
	}, func(t *testing.T, _ pflag.Value, in string) {
		if want, _ := quantity.ParseRate(in); f.rate == nil || *f.rate != want {
			t.Errorf("rate %v, want %v", f.rate, want)
		}
	})
}

func TestURLFlag(t *testing.T) {
	t.Parallel()
	var f *urlFlag
	check(t, "string", func() pflag.Value { f = &urlFlag{}; return f }, []setCase{
		{in: "http://127.0.0.1:8080/a?b=1", str: "http://127.0.0.1:8080/a?b=1"},
		{in: "https://user:secret@example.com/", str: "https://example.com/"}, // no password where it is shown
		{in: "", str: ""}, // as if not given
		{in: "127.0.0.1:8080/", err: `bad --url "127.0.0.1:8080/": it needs a scheme, as in http://127.0.0.1:8080/`, refused: true},
		{in: "http://[::1", err: `bad --url "http://[::1": missing ']' in host`, refused: true},
		{in: "http://u:hunter2pw@[::1", err: `bad --url "http://[::1": missing ']' in host`, refused: true}, // no password where it is refused
		{in: "http://u:p@w@h:1%zz/", err: `bad --url "http://h:1%zz/": invalid port ":1%zz" after host`, refused: true},
		{in: "ftp://127.0.0.1/", err: "the scheme must be http or https", refused: true},
		{in: "http:///x", err: `bad --url "http:///x": no host`, refused: true},
		{in: "http://u:pw@127.0.0.1:99999/", err: `bad --url "http://127.0.0.1:99999/": bad port "99999"`, refused: true},
		{in: "http://127.0.0.1:0/", err: `bad port "0"`, refused: true},
	}, func(t *testing.T, _ pflag.Value, in string) {
		if (f.url == nil) != (in == "") {
			t.Errorf("url %v for %q", f.url, in)
		}
	})
}

func TestMethodFlag(t *testing.T) {
	t.Parallel()
	check(t, "string", func() pflag.Value { return &methodFlag{method: "GET"} }, []setCase{
		{in: "post", str: "POST"},
		{in: "PROPFIND", str: "PROPFIND"},
		{in: "GE T", err: `-X: bad method "GE T"`, refused: true},
		{in: "", err: "-X: empty method", refused: true},
	}, nil)
}

func TestHeaderFlag(t *testing.T) {
	t.Parallel()
	f := &headerFlag{}
	if f.Type() != "stringArray" || f.String() != "" {
		t.Fatalf("empty: Type %q, String %q", f.Type(), f.String())
	}
	for _, h := range []string{"Content-Type: application/json", "  X-Trace :  a:b  "} {
		if err := f.Set(h); err != nil {
			t.Fatal(err)
		}
	}
	want := []httpx.Header{{Name: "Content-Type", Value: "application/json"}, {Name: "X-Trace", Value: "a:b"}}
	if len(f.headers) != 2 || f.headers[0] != want[0] || f.headers[1] != want[1] {
		t.Errorf("headers %+v, want %+v", f.headers, want)
	}
	if s := f.String(); s != "[Content-Type: application/json,X-Trace: a:b]" {
		t.Errorf("String() %q", s)
	}
	check(t, "stringArray", func() pflag.Value { return &headerFlag{} }, []setCase{
		{in: "Accept: */*", str: "[Accept: */*]"},
		{in: "NoColon", err: `-H "NoColon": want 'Name: value'`, refused: true},
		{in: "Bad Name: x", err: `-H: bad header name "Bad Name"`, refused: true},
		{in: "X: a\rb", err: "-H: header X: value contains a line break", refused: true},
	}, nil)
}

// TestFlagErrorsAsToday: through the command, a refused value is shown as
// it is, one line, exit 2; a value of the wrong kind keeps pflag's frame.
func TestFlagErrorsAsToday(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"run", "--url", "http://127.0.0.1:1/", "-n", "0"}, "loadlab: run: -n must be positive, got 0\n"},
		{[]string{"run", "--url", "http://127.0.0.1:1/", "--max-body", "0"}, "loadlab: run: --max-body: bad size \"0\"\n"},
		{[]string{"run", "plan.yaml", "--event-loops", "-2"}, "loadlab: run: --event-loops must not be negative, got -2\n"},
		{[]string{"run", "--url", "http://127.0.0.1:1/", "-c", "abc"}, "loadlab: run: invalid argument \"abc\" for \"-c, --connections\" flag: want a whole number (see loadlab run --help)\n"},
	} {
		_, stderr, code := cli(t.Context(), t, tt.args...)
		if code != exitUsage || stderr != tt.want {
			t.Errorf("%q: exit %d, stderr %q; want 2, %q", tt.args, code, stderr, tt.want)
		}
	}
}
