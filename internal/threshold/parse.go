package threshold

import (
	"fmt"
	"maps"
	"math"
	"math/big"
	"slices"
	"strings"
	"time"
	"unicode"

	"github.com/loadlab/loadlab/internal/quantity"
	"github.com/loadlab/loadlab/internal/suggest"
)

// SyntaxError is a threshold that does not parse.
type SyntaxError struct {
	// Col is the 1-based column, counted in characters (not bytes, so that
	// "µs" is one column per letter), of the threshold text where the
	// problem starts. The plan loader adds the position of the string in
	// the YAML file.
	Col int
	Msg string // what was expected, and what was found
}

func (e *SyntaxError) Error() string { return fmt.Sprintf("column %d: %s", e.Col, e.Msg) }

// Parse reads one threshold. Its errors are *SyntaxError.
func Parse(text string) (*Threshold, error) {
	p := &parser{src: []rune(text), t: &Threshold{Text: text}}
	if err := p.threshold(); err != nil {
		return nil, err
	}
	return p.t, nil
}

// parser reads a threshold by recursive descent over its characters; pos is
// an index into src, so a column is pos+1.
type parser struct {
	src  []rune
	pos  int
	t    *Threshold
	info metricInfo // of t.Metric, once known
}

func (p *parser) errAt(pos int, format string, args ...any) *SyntaxError {
	return &SyntaxError{Col: pos + 1, Msg: fmt.Sprintf(format, args...)}
}

func (p *parser) eof() bool { return p.pos >= len(p.src) }

// peek is the next character, or 0 at the end.
func (p *parser) peek() rune {
	if p.eof() {
		return 0
	}
	return p.src[p.pos]
}

func (p *parser) skipSpace() {
	for !p.eof() && unicode.IsSpace(p.src[p.pos]) {
		p.pos++
	}
}

// take consumes the longest run of characters that satisfy ok.
func (p *parser) take(ok func(rune) bool) string {
	start := p.pos
	for !p.eof() && ok(p.src[p.pos]) {
		p.pos++
	}
	return string(p.src[start:p.pos])
}

// sofar is the text consumed, for messages that say "after ...".
func (p *parser) sofar() string { return strings.TrimSpace(string(p.src[:p.pos])) }

// token is the text from pos to the next space, for messages that say "got ...".
func (p *parser) token() string {
	end := p.pos
	for end < len(p.src) && !unicode.IsSpace(p.src[end]) {
		end++
	}
	return string(p.src[p.pos:end])
}

func (p *parser) rest() string { return strings.TrimSpace(string(p.src[p.pos:])) }

// isNameRune: metric, aggregate and filter names ("server.rss.peak", "p99.9").
func isNameRune(r rune) bool {
	return r == '_' || r == '.' || ('a' <= r && r <= 'z') || ('A' <= r && r <= 'Z') || ('0' <= r && r <= '9')
}

// isBareRune: a filter's word unquoted. Quotes are needed for step names
// such as "GET /products/{{ id }}" that hold spaces or punctuation of the
// grammar.
func isBareRune(r rune) bool {
	return !unicode.IsSpace(r) && !strings.ContainsRune(`,()="\<>`, r)
}

func isDigit(r rune) bool { return '0' <= r && r <= '9' }

func (p *parser) threshold() error {
	p.skipSpace()
	if p.eof() {
		return p.errAt(p.pos, "empty threshold; expected something like p95(latency) < 500ms")
	}
	if err := p.selector(); err != nil {
		return err
	}
	opStart, err := p.operator()
	if err != nil {
		return err
	}
	return p.value(opStart)
}

// selector reads what is measured: aggregate(metric, filters) or metric(filters).
func (p *parser) selector() error {
	start := p.pos
	name := p.take(isNameRune)
	if name == "" {
		return p.errAt(start, "expected a metric such as error_rate or an aggregate such as p95(latency), got %q", p.token())
	}
	p.skipSpace()
	if p.peek() != '(' {
		info, ok := lookupMetric(name)
		switch {
		case ok && info.distribution:
			return p.errAt(start, "%s needs an aggregate such as p95(%s) or avg(%s)", name, name, name)
		case ok:
			p.setMetric(info)
			return nil
		}
		if _, _, isAggregate, _ := parseAggregate(name); isAggregate {
			return p.errAt(start, "%s needs a metric in parentheses, such as %s(latency)", name, name)
		}
		return p.errAt(start, "%s", unknownMetric(name))
	}
	paren := p.pos
	p.pos++
	if aggregate, quantile, isAggregate, problem := parseAggregate(name); isAggregate {
		if problem != "" {
			return p.errAt(start, "%s", problem)
		}
		return p.aggregated(start, name, aggregate, quantile)
	}
	if info, ok := lookupMetric(name); ok {
		switch {
		case info.distribution:
			return p.errAt(start, "%s needs an aggregate such as p95(%s) or avg(%s)", name, name, name)
		case !info.filters:
			return p.errAt(paren, "%s describes the whole run and takes no filters; write %s", name, info.example)
		}
		p.setMetric(info)
		p.skipSpace()
		if p.peek() == ')' {
			return p.errAt(p.pos, "expected a filter such as step=login in %s()", name)
		}
		if err := p.filter(); err != nil {
			return err
		}
		return p.filtersThenClose()
	}
	if name == "p" {
		return p.errAt(start, "write the percentile in the name, as in p95(latency), not p(95)")
	}
	return p.errAt(start, "%s", unknownAggregate(name))
}

func (p *parser) setMetric(info metricInfo) {
	p.info = info
	p.t.Metric = info.name
}

// aggregated reads the rest of aggregate(metric, filters), after the "(".
func (p *parser) aggregated(start int, name string, aggregate Aggregate, quantile float64) error {
	p.skipSpace()
	metricStart := p.pos
	metric := p.take(isNameRune)
	if metric == "" {
		return p.errAt(metricStart, "expected a metric such as latency in %s(...)", name)
	}
	info, ok := lookupMetric(metric)
	if !ok {
		if isFilterKey(metric) {
			return p.errAt(metricStart, "expected a metric before the filters, as in %s(latency, %s=...)", name, metric)
		}
		return p.errAt(metricStart, "%s", unknownMetric(metric))
	}
	if !info.distribution {
		return p.errAt(start, "%s takes no aggregate; compare it directly, as in %s", metric, info.example)
	}
	p.setMetric(info)
	p.t.Aggregate, p.t.Quantile = aggregate, quantile
	return p.filtersThenClose()
}

// filtersThenClose reads { "," filter } ")".
func (p *parser) filtersThenClose() error {
	for {
		p.skipSpace()
		switch {
		case p.peek() == ')':
			p.pos++
			return nil
		case p.peek() == ',':
			p.pos++
			if err := p.filter(); err != nil {
				return err
			}
		case p.eof():
			return p.errAt(p.pos, "expected \")\" to close %s", p.sofar())
		default:
			hint := ""
			if p.pos > 0 && p.src[p.pos-1] == ' ' && !strings.HasSuffix(p.sofar(), ",") {
				hint = ` (a name with spaces goes in double quotes: step="GET /")`
			}
			return p.errAt(p.pos, "expected \",\" or \")\" after %s, got %q%s", p.sofar(), p.token(), hint)
		}
	}
}

// filterKeys are the filters, in the order error messages list them.
var filterKeys = [...]string{"step", "scenario", "status"}

func isFilterKey(s string) bool { return slices.Contains(filterKeys[:], s) }

// statusClasses are the words status= takes: the keys of result.StepHistograms.
var statusClasses = [...]string{StatusOK, Status4xx, Status5xx, StatusFailed}

// filter reads key=word.
func (p *parser) filter() error {
	p.skipSpace()
	keyStart := p.pos
	key := p.take(isNameRune)
	if key == "" {
		return p.errAt(keyStart, "expected a filter such as step=login after %s", p.sofar())
	}
	if !isFilterKey(key) {
		msg := fmt.Sprintf("unknown filter %q", key)
		if s := suggest.Closest(key, filterKeys[:]); s != "" {
			return p.errAt(keyStart, "%s; did you mean %q?", msg, s)
		}
		return p.errAt(keyStart, "%s; filters are step=, scenario= and status=", msg)
	}
	name := p.info.name
	switch {
	case !p.info.filters:
		return p.errAt(keyStart, "%s is measured for the whole run and takes no filters", name)
	case key != "scenario" && (name == Iterations || name == Dropped):
		return p.errAt(keyStart, "%s is counted per scenario, not per step or status class: it takes scenario= only, as in %s(scenario=checkout)", name, name)
	case key == "status" && !p.info.status:
		return p.errAt(keyStart, "%s is not recorded by status class; status= applies to latency, service_time, error_rate, rate and requests", name)
	}
	field := map[string]*string{"step": &p.t.Filters.Step, "scenario": &p.t.Filters.Scenario, "status": &p.t.Filters.Status}[key]
	if *field != "" {
		return p.errAt(keyStart, "%s= given twice; a threshold takes each filter once", key)
	}
	p.skipSpace()
	if p.peek() != '=' {
		return p.errAt(p.pos, "expected \"=\" after %s, as in %s=%s", key, key, map[string]string{"step": "login", "scenario": "checkout", "status": "5xx"}[key])
	}
	p.pos++
	p.skipSpace()
	wordStart := p.pos
	word, err := p.word()
	if err != nil {
		return err
	}
	if word == "" {
		if key == "status" {
			return p.errAt(wordStart, "filter status= needs a class: ok, 4xx, 5xx or failed")
		}
		return p.errAt(wordStart, "filter %s= needs a name", key)
	}
	if key == "status" {
		if err := p.checkStatus(wordStart, word); err != nil {
			return err
		}
	}
	*field = word
	return nil
}

func (p *parser) checkStatus(at int, class string) error {
	if slices.Contains(statusClasses[:], class) {
		if p.info.name == ErrorRate && class == StatusOK {
			return p.errAt(at, "error_rate with status=ok is always 0%%; use status=4xx, 5xx or failed")
		}
		return nil
	}
	if strings.IndexFunc(class, func(r rune) bool { return !isDigit(r) }) < 0 {
		return p.errAt(at, "status= takes a class, not a code: ok, 4xx, 5xx or failed")
	}
	msg := fmt.Sprintf("unknown status class %q", class)
	if class == "2xx" || class == "1xx" || class == "3xx" {
		return p.errAt(at, "%s: 1xx, 2xx and 3xx answers are the class ok", msg)
	}
	if s := suggest.Closest(class, statusClasses[:]); s != "" {
		return p.errAt(at, "%s; did you mean %q?", msg, s)
	}
	return p.errAt(at, "%s; classes are ok, 4xx, 5xx and failed", msg)
}

// word reads a bare or double-quoted word; in quotes a backslash takes the
// next character as it is.
func (p *parser) word() (string, error) {
	if p.peek() != '"' {
		return p.take(isBareRune), nil
	}
	open := p.pos
	p.pos++
	var b strings.Builder
	for !p.eof() {
		r := p.src[p.pos]
		p.pos++
		switch r {
		case '"':
			return b.String(), nil
		case '\\':
			if p.eof() {
				break
			}
			r = p.src[p.pos]
			p.pos++
		}
		b.WriteRune(r)
	}
	return "", p.errAt(open, "unterminated quoted name: missing the closing \"")
}

// operator reads the comparison and returns where it started.
func (p *parser) operator() (int, error) {
	p.skipSpace()
	start := p.pos
	var op Op
	switch p.peek() {
	case '<':
		op = Less
	case '>':
		op = Greater
	default:
		if p.eof() {
			return start, p.errAt(start, "expected an operator (<, <=, >, >=) after %s", p.sofar())
		}
		return start, p.errAt(start, "expected an operator (<, <=, >, >=) after %s, got %q", p.sofar(), p.token())
	}
	p.pos++
	if p.peek() == '=' {
		p.pos++
		op++ // LessOrEqual follows Less, GreaterOrEqual follows Greater
	}
	p.t.Op = op
	return start, nil
}

// unitExample says what a value of the metric looks like, for messages.
func (info metricInfo) unitExample() string {
	switch info.unit {
	case Milliseconds:
		return "a duration such as 500ms"
	case Fraction:
		_, v, _ := strings.Cut(info.example, " < ")
		if v == "" {
			_, v, _ = strings.Cut(info.example, " > ")
		}
		return "a percentage such as " + v
	case Bytes:
		return "a byte size such as 2560MiB"
	case PerSecond:
		return "a rate such as 100/s"
	}
	return "a whole number such as 10"
}

// value reads number [unit] to the end of the text, in the metric's unit.
func (p *parser) value(opStart int) error {
	p.skipSpace()
	start := p.pos
	info := p.info
	if p.eof() {
		return p.errAt(start, "expected %s after %s", info.unitExample(), p.t.Op)
	}
	if p.peek() == '-' {
		return p.errAt(start, "a threshold value cannot be negative")
	}
	number := p.take(isDigit)
	if p.peek() == '.' && p.pos+1 < len(p.src) && isDigit(p.src[p.pos+1]) {
		p.pos++
		number += "." + p.take(isDigit)
	}
	if number == "" {
		return p.errAt(start, "%s needs %s, got %q", info.name, info.unitExample(), p.rest())
	}
	p.skipSpace()
	var unit string
	switch r := p.peek(); {
	case r == '%':
		p.pos++
		unit = "%"
	case r == '/':
		p.pos++
		p.skipSpace()
		unit = "/" + p.take(isDigit) + p.take(unicode.IsLetter)
	case unicode.IsLetter(r):
		unit = p.take(unicode.IsLetter)
	}
	end := p.pos
	p.skipSpace()
	if !p.eof() {
		return p.errAt(p.pos, "unexpected %q after the value %s", p.rest(), strings.TrimSpace(string(p.src[start:end])))
	}
	written := strings.TrimSpace(string(p.src[start:end]))
	v, problem := convert(info, number, unit)
	if problem != "" {
		return p.errAt(start, "%s", problem)
	}
	if v == nil {
		return p.errAt(start, "%s needs %s, got %q", info.name, info.unitExample(), written)
	}
	f, _ := v.Float64()
	switch {
	case math.IsInf(f, 0):
		return p.errAt(start, "%s is too large", written)
	case info.unit == Fraction && info.name != ServerCPUAvg && info.name != ServerCPUPeak && f > 1:
		return p.errAt(start, "%s is a share and cannot exceed 100%%, got %s", info.name, written)
	case p.t.Op == Less && f == 0:
		return p.errAt(opStart, "%s < %s can never pass: %s is never below zero",
			strings.TrimSpace(string(p.src[:opStart])), written, info.name)
	}
	p.t.Value = f
	return nil
}

// convert reads number and unit into the metric's canonical unit, exactly:
// decimals go through big.Rat so that 99.9% is the float64 nearest 0.999,
// the same float a measured 999/1000 gives, and a limit equal to the
// measured figure compares as equal. A nil result with no problem means the
// unit does not suit the metric.
func convert(info metricInfo, number, unit string) (v *big.Rat, problem string) {
	n, ok := new(big.Rat).SetString(number)
	if !ok {
		return nil, ""
	}
	switch info.unit {
	case Milliseconds:
		per := map[string]*big.Rat{
			"us": big.NewRat(1, 1000), "µs": big.NewRat(1, 1000), "μs": big.NewRat(1, 1000),
			"ms": big.NewRat(1, 1), "s": big.NewRat(1000, 1), "m": big.NewRat(60_000, 1), "h": big.NewRat(3_600_000, 1),
		}[unit]
		if per == nil {
			return nil, ""
		}
		return n.Mul(n, per), ""
	case Fraction:
		if unit != "%" {
			return nil, ""
		}
		return n.Quo(n, big.NewRat(100, 1)), ""
	case Bytes:
		// A bare number of bytes is almost always a forgotten unit.
		if unit == "" || unit == "%" || strings.HasPrefix(unit, "/") {
			return nil, ""
		}
		b, err := quantity.ParseBytes(number + unit)
		if err != nil {
			if _, unitErr := quantity.ParseBytes("1" + unit); unitErr == nil {
				return nil, fmt.Sprintf("%s%s is too large", number, unit)
			}
			return nil, ""
		}
		return new(big.Rat).SetInt64(b), ""
	case PerSecond:
		if !strings.HasPrefix(unit, "/") {
			return nil, ""
		}
		rate, err := quantity.ParseRateAllowZero(number + unit)
		if err != nil {
			return nil, ""
		}
		// count / period, exactly: 7000/10m is 7000 / 600 s.
		return n.Quo(n.Mul(n, big.NewRat(int64(time.Second), 1)), big.NewRat(int64(rate.Per), 1)), ""
	case Count:
		if unit != "" || strings.Contains(number, ".") {
			return nil, ""
		}
		return n, ""
	}
	return nil, ""
}

// parseAggregate reads an aggregate's name. isAggregate says the name is
// one (or is meant as a percentile, then problem says what is wrong).
func parseAggregate(name string) (aggregate Aggregate, quantile float64, isAggregate bool, problem string) {
	switch name {
	case "avg":
		return Average, 0, true, ""
	case "min":
		return Minimum, 0, true, ""
	case "max":
		return Maximum, 0, true, ""
	case "med":
		return Percentile, 50, true, ""
	}
	digits, ok := strings.CutPrefix(name, "p")
	if !ok || digits == "" || !isDigit(rune(digits[0])) || strings.Trim(digits, "0123456789.") != "" {
		return 0, 0, false, ""
	}
	whole, fraction, dotted := strings.Cut(digits, ".")
	switch {
	case dotted && (fraction == "" || strings.Contains(fraction, ".")):
		return 0, 0, true, fmt.Sprintf("bad percentile %q: write it as p95 or p99.9", name)
	case !dotted && len(whole) > 2 && whole != "100":
		// p999 is the common spelling of p99.9, p9999 of p99.99.
		if !strings.HasPrefix(whole, "99") {
			return 0, 0, true, fmt.Sprintf("percentile %q is ambiguous; write it with a dot, as in p99.9", name)
		}
		digits = "99." + whole[2:]
	}
	q, _ := new(big.Rat).SetString(digits)
	switch {
	case q.Sign() == 0:
		return 0, 0, true, fmt.Sprintf("%s is the minimum; write min(...)", name)
	case q.Cmp(big.NewRat(100, 1)) > 0:
		return 0, 0, true, fmt.Sprintf("%s is not a percentile; they run from above p0 to p100", name)
	}
	f, _ := q.Float64()
	return Percentile, f, true, ""
}

// Names that people bring from other tools, and what loadlab calls them.
var metricAliases = map[string]string{
	"http_req_duration": "latency", "duration": "latency", "response_time": "latency",
	"http_req_waiting": "ttfb", "http_req_connecting": "connect", "http_req_tls_handshaking": "tls",
	"http_req_failed": "error_rate", "errors": "error_rate", "failures": "error_rate",
	"rps": "rate", "throughput": "rate", "http_reqs": "requests",
	"cpu": "server.cpu.avg", "rss": "server.rss.peak", "memory": "server.rss.peak", "swap": "server.swap.peak",
}

var aggregateAliases = map[string]string{
	"average": "avg", "mean": "avg", "median": "med", "maximum": "max", "minimum": "min",
}

// aggregateNames are the aggregates error messages suggest.
var aggregateNames = [...]string{"p50", "p90", "p95", "p99", "p99.9", "avg", "min", "max", "med"}

func metricNames() []string {
	names := make([]string, len(metricTable))
	for i, m := range metricTable {
		names[i] = string(m.name)
	}
	return names
}

func suggestMetric(name string) string {
	if s, ok := metricAliases[strings.ToLower(name)]; ok {
		return s
	}
	// server.rss.max for server.rss.peak, server.cpu.mean for server.cpu.avg.
	if strings.HasPrefix(name, "server.") {
		for _, pair := range [][2]string{{".max", ".peak"}, {".mean", ".avg"}, {".average", ".avg"}} {
			if fixed, ok := strings.CutSuffix(name, pair[0]); ok {
				if _, known := lookupMetric(fixed + pair[1]); known {
					return fixed + pair[1]
				}
			}
		}
	}
	return suggest.Closest(name, metricNames())
}

func unknownMetric(name string) string {
	msg := fmt.Sprintf("unknown metric %q", name)
	if s := suggestMetric(name); s != "" {
		return fmt.Sprintf("%s; did you mean %q?", msg, s)
	}
	return msg + "; metrics are " + strings.Join(metricNames(), ", ")
}

// unknownAggregate explains a name followed by "(" that is neither an
// aggregate nor a metric; it may be a misspelling of either.
func unknownAggregate(name string) string {
	candidates := append(aggregateNames[:len(aggregateNames):len(aggregateNames)], metricNames()...)
	// Sorted, so that ties in closest always resolve the same way.
	candidates = append(candidates, slices.Sorted(maps.Keys(aggregateAliases))...)
	if s := suggest.Closest(name, candidates); s != "" {
		if _, isMetric := lookupMetric(s); isMetric {
			return fmt.Sprintf("unknown metric %q; did you mean %q?", name, s)
		}
		if meant, ok := aggregateAliases[s]; ok {
			s = meant // "averge" is near "average", which loadlab writes "avg"
		}
		return fmt.Sprintf("unknown aggregate %q; did you mean %q?", name, s)
	}
	return fmt.Sprintf("unknown aggregate %q; aggregates are p50, p90, p95, p99, p99.9 (any pNN), avg, min, max and med", name)
}
