package threshold

import (
	"errors"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestParseGood(t *testing.T) {
	tests := []struct {
		name, in, canonical string
		want                Threshold // Text is filled in from in
	}{
		{"p95 latency", "p95(latency) < 500ms", "p95(latency) < 500ms",
			Threshold{Metric: Latency, Aggregate: Percentile, Quantile: 95, Op: Less, Value: 500}},
		{"p99 of a step", "p99(latency, step=login) < 2s", "p99(latency, step=login) < 2s",
			Threshold{Metric: Latency, Aggregate: Percentile, Quantile: 99, Filters: Filters{Step: "login"}, Op: Less, Value: 2000}},
		{"error rate", "error_rate < 1%", "error_rate < 1%",
			Threshold{Metric: ErrorRate, Op: Less, Value: 0.01}},
		{"checks", "checks > 99%", "checks > 99%",
			Threshold{Metric: Checks, Op: Greater, Value: 0.99}},
		{"rate", "rate > 100/s", "rate > 100/s",
			Threshold{Metric: Rate, Op: Greater, Value: 100}},
		{"rss peak against the quota", "server.rss.peak < 2560MiB", "server.rss.peak < 2560MiB",
			Threshold{Metric: ServerRSSPeak, Op: Less, Value: 2560 << 20}},
		{"cpu average", "server.cpu.avg < 80%", "server.cpu.avg < 80%",
			Threshold{Metric: ServerCPUAvg, Op: Less, Value: 0.8}},
		{"p999 is p99.9", "p999(latency) <= 1s", "p99.9(latency) <= 1s",
			Threshold{Metric: Latency, Aggregate: Percentile, Quantile: 99.9, Op: LessOrEqual, Value: 1000}},
		{"p99.9 with a dot", "p99.9(service_time) < 750ms", "p99.9(service_time) < 750ms",
			Threshold{Metric: ServiceTime, Aggregate: Percentile, Quantile: 99.9, Op: Less, Value: 750}},
		{"p9999 is p99.99", "p9999(latency) < 5s", "p99.99(latency) < 5s",
			Threshold{Metric: Latency, Aggregate: Percentile, Quantile: 99.99, Op: Less, Value: 5000}},
		{"p100 is allowed", "p100(latency) < 10s", "p100(latency) < 10s",
			Threshold{Metric: Latency, Aggregate: Percentile, Quantile: 100, Op: Less, Value: 10000}},
		{"med is p50", "med(ttfb) < 100ms", "p50(ttfb) < 100ms",
			Threshold{Metric: TTFB, Aggregate: Percentile, Quantile: 50, Op: Less, Value: 100}},
		{"avg below a millisecond", "avg(latency) < 0.5ms", "avg(latency) < 0.5ms",
			Threshold{Metric: Latency, Aggregate: Average, Op: Less, Value: 0.5}},
		{"microseconds as us", "max(latency) < 500us", "max(latency) < 0.5ms",
			Threshold{Metric: Latency, Aggregate: Maximum, Op: Less, Value: 0.5}},
		{"microseconds as µs", "min(connect) >= 1µs", "min(connect) >= 0.001ms",
			Threshold{Metric: Connect, Aggregate: Minimum, Op: GreaterOrEqual, Value: 0.001}},
		{"all three filters in canonical order", "p90(latency, status=5xx, step=login, scenario=sign_up) < 3s",
			"p90(latency, scenario=sign_up, step=login, status=5xx) < 3s",
			Threshold{Metric: Latency, Aggregate: Percentile, Quantile: 90,
				Filters: Filters{Scenario: "sign_up", Step: "login", Status: "5xx"}, Op: Less, Value: 3000}},
		{"minutes", "p95(latency, status=ok) < 1m", "p95(latency, status=ok) < 1m",
			Threshold{Metric: Latency, Aggregate: Percentile, Quantile: 95, Filters: Filters{Status: "ok"}, Op: Less, Value: 60000}},
		{"whitespace is free", "  p95 ( latency ,step = login )<=  250 ms  ", "p95(latency, step=login) <= 250ms",
			Threshold{Metric: Latency, Aggregate: Percentile, Quantile: 95, Filters: Filters{Step: "login"}, Op: LessOrEqual, Value: 250}},
		{"no whitespace at all", "p50(latency)<1500ms", "p50(latency) < 1500ms",
			Threshold{Metric: Latency, Aggregate: Percentile, Quantile: 50, Op: Less, Value: 1500}},
		{"quoted step name", `p95(latency, step="GET /products/{{ id }}") < 1s`, `p95(latency, step="GET /products/{{ id }}") < 1s`,
			Threshold{Metric: Latency, Aggregate: Percentile, Quantile: 95, Filters: Filters{Step: "GET /products/{{ id }}"}, Op: Less, Value: 1000}},
		{"escapes in quotes", `p95(latency, step="say \"hi\"") < 1s`, `p95(latency, step="say \"hi\"") < 1s`,
			Threshold{Metric: Latency, Aggregate: Percentile, Quantile: 95, Filters: Filters{Step: `say "hi"`}, Op: Less, Value: 1000}},
		{"needless quotes dropped", `p95(latency, step="login") < 1s`, `p95(latency, step=login) < 1s`,
			Threshold{Metric: Latency, Aggregate: Percentile, Quantile: 95, Filters: Filters{Step: "login"}, Op: Less, Value: 1000}},
		{"error rate of a status class", "error_rate(status=5xx) < 0.1%", "error_rate(status=5xx) < 0.1%",
			Threshold{Metric: ErrorRate, Filters: Filters{Status: "5xx"}, Op: Less, Value: 0.001}},
		{"error rate of a step", "error_rate(step=login, scenario=sign_up) <= 2.5%", "error_rate(scenario=sign_up, step=login) <= 2.5%",
			Threshold{Metric: ErrorRate, Filters: Filters{Scenario: "sign_up", Step: "login"}, Op: LessOrEqual, Value: 0.025}},
		{"error rate of zero", "error_rate <= 0%", "error_rate <= 0%",
			Threshold{Metric: ErrorRate, Op: LessOrEqual, Value: 0}},
		{"rate per minute", "rate(scenario=checkout) >= 6000/m", "rate(scenario=checkout) >= 100/s",
			Threshold{Metric: Rate, Filters: Filters{Scenario: "checkout"}, Op: GreaterOrEqual, Value: 100}},
		{"rate per ten minutes", "rate > 7000/10m", "rate > 700/m",
			Threshold{Metric: Rate, Op: Greater, Value: 7000.0 / 600}},
		{"half a request a second", "rate > 0.5/s", "rate > 30/m",
			Threshold{Metric: Rate, Op: Greater, Value: 0.5}},
		{"requests", "requests > 1000", "requests > 1000",
			Threshold{Metric: Requests, Op: Greater, Value: 1000}},
		{"failed requests", "requests(status=failed) <= 0", "requests(status=failed) <= 0",
			Threshold{Metric: Requests, Filters: Filters{Status: "failed"}, Op: LessOrEqual, Value: 0}},
		{"iterations", "iterations >= 7000", "iterations >= 7000",
			Threshold{Metric: Iterations, Op: GreaterOrEqual, Value: 7000}},
		{"dropped", "dropped <= 0", "dropped <= 0",
			Threshold{Metric: Dropped, Op: LessOrEqual, Value: 0}},
		{"cpu above one core", "server.cpu.peak < 150%", "server.cpu.peak < 150%",
			Threshold{Metric: ServerCPUPeak, Op: Less, Value: 1.5}},
		{"decimal gigabytes", "server.pss.avg < 1.5GB", "server.pss.avg < 1500MB",
			Threshold{Metric: ServerPSSAvg, Op: Less, Value: 1.5e9}},
		{"binary gigabytes", "server.rss.avg < 1 GiB", "server.rss.avg < 1GiB",
			Threshold{Metric: ServerRSSAvg, Op: Less, Value: 1 << 30}},
		{"no swap at all", "server.swap.peak <= 0B", "server.swap.peak <= 0B",
			Threshold{Metric: ServerSwapPeak, Op: LessOrEqual, Value: 0}},
		{"major faults", "server.major_faults < 100", "server.major_faults < 100",
			Threshold{Metric: ServerMajorFaults, Op: Less, Value: 100}},
		{"checks of a step", "checks(step=login) >= 99.9%", "checks(step=login) >= 99.9%",
			Threshold{Metric: Checks, Filters: Filters{Step: "login"}, Op: GreaterOrEqual, Value: 0.999}},
		{"p75 of ttfb in a scenario", "p75(ttfb, scenario=checkout) > 2ms", "p75(ttfb, scenario=checkout) > 2ms",
			Threshold{Metric: TTFB, Aggregate: Percentile, Quantile: 75, Filters: Filters{Scenario: "checkout"}, Op: Greater, Value: 2}},
		{"time to fail", "avg(service_time, status=failed) < 30s", "avg(service_time, status=failed) < 30s",
			Threshold{Metric: ServiceTime, Aggregate: Average, Filters: Filters{Status: "failed"}, Op: Less, Value: 30000}},
		{"2000ms is 2s", "p95(latency) < 2000ms", "p95(latency) < 2s",
			Threshold{Metric: Latency, Aggregate: Percentile, Quantile: 95, Op: Less, Value: 2000}},
		{"hours", "max(latency) < 1h", "max(latency) < 1h",
			Threshold{Metric: Latency, Aggregate: Maximum, Op: Less, Value: 3_600_000}},
		{"fractional percentile", "p99.95(latency) < 1.25s", "p99.95(latency) < 1250ms",
			Threshold{Metric: Latency, Aggregate: Percentile, Quantile: 99.95, Op: Less, Value: 1250}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Parse(tt.in)
			if err != nil {
				t.Fatalf("Parse(%q): %v", tt.in, err)
			}
			want := tt.want
			want.Text = tt.in
			if *got != want {
				t.Errorf("Parse(%q)\n got %+v\nwant %+v", tt.in, *got, want)
			}
			if s := got.String(); s != tt.canonical {
				t.Errorf("String() = %q, want %q", s, tt.canonical)
			}
			again, err := Parse(got.String())
			if err != nil {
				t.Fatalf("the canonical form does not parse: %v", err)
			}
			again.Text = got.Text
			if *again != *got {
				t.Errorf("the canonical form parses to %+v, want %+v", *again, *got)
			}
		})
	}
}

func TestParseBad(t *testing.T) {
	tests := []struct {
		name, in string
		col      int
		msg      string // a fragment of the message
	}{
		{"empty", "", 1, "empty threshold; expected something like p95(latency) < 500ms"},
		{"only spaces", "   ", 4, "empty threshold"},
		{"no operator", "p95(latency) 500ms", 14, "expected an operator (<, <=, >, >=) after p95(latency)"},
		{"nothing after the metric", "p95(latency)", 13, "expected an operator (<, <=, >, >=) after p95(latency)"},
		{"equals is not an operator", "p95(latency) == 500ms", 14, `expected an operator (<, <=, >, >=) after p95(latency), got "=="`},
		{"misspelt metric", "p95(latncy) < 500ms", 5, `unknown metric "latncy"; did you mean "latency"?`},
		{"swapped letters", "p95(latnecy) < 500ms", 5, `did you mean "latency"?`},
		{"name from k6", "http_req_duration < 500ms", 1, `unknown metric "http_req_duration"; did you mean "latency"?`},
		{"max for peak", "server.rss.max < 1GiB", 1, `did you mean "server.rss.peak"?`},
		{"server prefix only", "server.cpu < 80%", 1, `did you mean "server.cpu.avg"?`},
		{"unknown metric, no hint", "bananas < 3", 1, `unknown metric "bananas"; metrics are latency, service_time`},
		{"percentage for a duration", "p95(latency) < 1%", 16, `latency needs a duration such as 500ms, got "1%"`},
		{"bare number for a duration", "p95(latency) < 500", 16, `latency needs a duration such as 500ms, got "500"`},
		{"unknown duration unit", "p95(latency) < 5 parsecs", 16, `latency needs a duration such as 500ms, got "5 parsecs"`},
		{"negative", "p95(latency) < -5ms", 16, "a threshold value cannot be negative"},
		{"never passes", "p95(latency) < 0ms", 14, "p95(latency) < 0ms can never pass"},
		{"no value", "p95(latency) <", 15, "expected a duration such as 500ms after <"},
		{"trailing words", "p95(latency) < 500ms and more", 22, `unexpected "and more" after the value 500ms`},
		{"fraction for a percentage", "error_rate < 0.01", 14, `error_rate needs a percentage such as 1%, got "0.01"`},
		{"share above 100%", "error_rate < 150%", 14, "error_rate is a share and cannot exceed 100%"},
		{"checks need a percentage", "checks(step=login) > 99", 22, `checks needs a percentage such as 99%, got "99"`},
		{"rate needs a period", "rate > 100", 8, `rate needs a rate such as 100/s, got "100"`},
		{"bytes need a unit", "server.rss.peak < 2560", 19, `server.rss.peak needs a byte size such as 2560MiB, got "2560"`},
		{"lower-case byte unit", "server.rss.peak < 2560mb", 19, `got "2560mb"`},
		{"fractional count", "requests > 1.5", 12, `requests needs a whole number such as 10, got "1.5"`},
		{"empty step name", "p95(latency, step=) < 1s", 19, "filter step= needs a name"},
		{"empty quoted step name", `p95(latency, step="") < 1s`, 19, "filter step= needs a name"},
		{"empty status", "p95(latency, status= ) < 1s", 22, "filter status= needs a class: ok, 4xx, 5xx or failed"},
		{"unterminated quote", `p95(latency, step="login) < 1s`, 19, "unterminated quoted name"},
		{"misspelt filter", "p95(latency, stpe=login) < 1s", 14, `unknown filter "stpe"; did you mean "step"?`},
		{"unknown filter", "p95(latency, host=a) < 1s", 14, `unknown filter "host"; filters are step=, scenario= and status=`},
		{"colon for equals", "p95(latency, step:login) < 1s", 18, `expected "=" after step, as in step=login`},
		{"status code, not class", "p95(latency, status=500) < 1s", 21, "status= takes a class, not a code"},
		{"status in capitals", "p95(latency, status=5XX) < 1s", 21, `unknown status class "5XX"; did you mean "5xx"?`},
		{"status 2xx", "p95(latency, status=2xx) < 1s", 21, `unknown status class "2xx": 1xx, 2xx and 3xx answers are the class ok`},
		{"step name with a space", "p95(latency, step=GET /) < 1s", 23, `(a name with spaces goes in double quotes: step="GET /")`},
		{"error rate of ok responses", "error_rate(status=ok) < 1%", 19, "error_rate with status=ok is always 0%"},
		{"filter twice", "p95(latency, step=a, step=b) < 1s", 22, "step= given twice"},
		{"filters on a server metric", "server.rss.peak(step=login) < 1GiB", 16, "server.rss.peak describes the whole run and takes no filters"},
		{"filters on connect", "p95(connect, step=login) < 1s", 14, "connect is measured for the whole run and takes no filters"},
		{"status on ttfb", "p95(ttfb, status=ok) < 1s", 11, "ttfb is not recorded by status class"},
		{"status on checks", "checks(status=ok) > 99%", 8, "checks is not recorded by status class"},
		{"no filter in parentheses", "error_rate() < 1%", 12, "expected a filter such as step=login in error_rate()"},
		{"dangling comma", "error_rate(step=login,) < 1%", 23, "expected a filter such as step=login after error_rate(step=login,"},
		{"missing close", "p95(latency, step=login", 24, `expected ")" to close p95(latency, step=login`},
		{"missing comma", "p95(latency step=login) < 1s", 13, `expected "," or ")" after p95(latency, got "step=login)"`},
		{"operator inside", "p95(latency < 1s", 13, `expected "," or ")" after p95(latency, got "<"`},
		{"duration without aggregate", "latency < 500ms", 1, "latency needs an aggregate such as p95(latency) or avg(latency)"},
		{"duration with filters but no aggregate", "latency(step=login) < 500ms", 1, "latency needs an aggregate"},
		{"aggregate of a rate", "p95(error_rate) < 1%", 1, "error_rate takes no aggregate; compare it directly, as in error_rate < 1%"},
		{"aggregate without metric", "p95 < 500ms", 1, "p95 needs a metric in parentheses, such as p95(latency)"},
		{"empty parentheses", "p95() < 1s", 5, "expected a metric such as latency in p95(...)"},
		{"filter before metric", "p95(step=login) < 1s", 5, "expected a metric before the filters"},
		{"k6 percentile spelling", "p(95) < 1s", 1, "not p(95)"},
		{"ambiguous percentile", "p101(latency) < 1s", 1, `percentile "p101" is ambiguous`},
		{"p0", "p0(latency) < 1s", 1, "p0 is the minimum; write min(...)"},
		{"above p100", "p100.5(latency) < 1s", 1, "p100.5 is not a percentile"},
		{"dot without digits", "p99.(latency) < 1s", 1, `bad percentile "p99."`},
		{"upper-case aggregate", "P95(latency) < 1s", 1, `unknown aggregate "P95"; did you mean "p95"?`},
		{"misspelt aggregate", "avrage(latency) < 1s", 1, `unknown aggregate "avrage"; did you mean "avg"?`},
		{"aggregate from another tool", "median(latency) < 1s", 1, `did you mean "med"?`},
		{"misspelt metric with filters", "eror_rate(step=login) < 1%", 1, `unknown metric "eror_rate"; did you mean "error_rate"?`},
		{"operator first", "< 5ms", 1, `expected a metric such as error_rate or an aggregate such as p95(latency), got "<"`},
		{"columns count characters", "p95(latency) < 5µs µs", 20, `unexpected "µs" after the value 5µs`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Parse(tt.in)
			if err == nil {
				t.Fatalf("Parse(%q) = %v, want an error", tt.in, got)
			}
			var se *SyntaxError
			if !errors.As(err, &se) {
				t.Fatalf("Parse(%q): %T %v, want a *SyntaxError", tt.in, err, err)
			}
			if se.Col != tt.col || !strings.Contains(se.Msg, tt.msg) {
				t.Errorf("Parse(%q):\n got column %d: %s\nwant column %d: ...%s...", tt.in, se.Col, se.Msg, tt.col, tt.msg)
			}
		})
	}
}

// FuzzParse checks that Parse never panics, that its errors point inside
// the text, and that what it accepts prints canonically and parses back to
// the same threshold.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"p95(latency) < 500ms", "p99(latency, step=login) < 2s", "error_rate < 1%", "checks > 99%",
		"rate > 100/s", "server.rss.peak < 2560MiB", "server.cpu.avg < 80%", "rate > 7000/10m",
		`p95(latency, step="a \"b\"", scenario=c, status=5xx) <= 0.001ms`, "p999(ttfb) >= 1µs",
		"requests(status=failed) <= 0", "server.pss.avg < 1.5GB", "p(95) < 1s", "p95(latency", "",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		th, err := Parse(in)
		if err != nil {
			var se *SyntaxError
			if !errors.As(err, &se) {
				t.Fatalf("Parse(%q): %T, want *SyntaxError", in, err)
			}
			if n := utf8.RuneCountInString(in); se.Col < 1 || se.Col > n+1 {
				t.Fatalf("Parse(%q): column %d outside 1..%d", in, se.Col, n+1)
			}
			return
		}
		canonical := th.String()
		again, err := Parse(canonical)
		if err != nil {
			t.Fatalf("Parse(%q) prints as %q, which does not parse: %v", in, canonical, err)
		}
		again.Text = th.Text
		if *again != *th {
			t.Fatalf("Parse(%q) = %+v, but its canonical form %q parses to %+v", in, *th, canonical, *again)
		}
		if again.String() != canonical {
			t.Fatalf("canonical form not stable: %q then %q", canonical, again.String())
		}
	})
}
