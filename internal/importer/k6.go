package importer

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/dop251/goja/ast"
	"github.com/dop251/goja/file"
	"github.com/dop251/goja/parser"
	"github.com/dop251/goja/token"
)

// ErrScript marks a k6 script that cannot be imported: a syntax error (with
// its line:col), no function to run, no request.
var ErrScript = errors.New("bad script")

// K6Result is a converted k6 script.
type K6Result struct {
	Result
	// NotConverted lists, as "line:col: what", the parts of the script
	// that have no equivalent in the plan; each is also a "# not
	// converted:" comment at its place in the plan.
	NotConverted []string
	// Files are data files the plan reads (name beside the plan -> bytes):
	// a SharedArray's CSV as it is, or its JSON made into CSV.
	Files map[string][]byte
	// CheckPlan is the same journeys under one VU and one iteration, with
	// no thresholds, for --check.
	CheckPlan []byte
}

// k6 steps: a request, a pause, a comment.
type k6step struct {
	comment  string // "# ..." line in place of a step
	think    string
	method   string
	url      string
	name     string
	headers  []kv
	form     []kv
	json     any
	body     *string
	status   int
	contains []string
	noFollow bool
	captures []capture
}

type k6binding struct {
	tmpl   string         // template text of a constant or expression
	expr   string         // expr-lang expression, when not a literal
	res    *k6step        // a response: the step that made it
	source string         // a data source (SharedArray) name
	row    string         // a row of this data source
	node   ast.Expression // an object literal (params, bodies)
}

type k6scenario struct {
	name, exec string
	load       string
	steps      []*k6step
}

type k6conv struct {
	file, src string
	f         *file.File
	dir       string
	http      string            // local name of k6/http's default export
	fns       map[string]string // k6 function local name -> "check", "sleep", "group", "SharedArray", "open"
	papa      string
	global    map[string]*k6binding
	funcs     map[string]*ast.FunctionLiteral
	options   ast.Expression
	data      map[string]string // source -> csv file name
	picks     map[string]string
	order     []string
	notes     []string
	files     map[string][]byte
	origin    string
	steps     []*k6step // the function being converted
	top       []*k6step // comments before the steps
	stepNames map[string]bool
	checks    bool
	checksThr bool
}

// start is a node's offset in the source. goja's parser leaves an if
// statement's own position unset: it is found back from its test.
func (k *k6conv) start(n ast.Node) int {
	if s, ok := n.(*ast.IfStatement); ok {
		i := int(s.Test.Idx0()) - k.f.Base()
		for i > 0 && (k.src[i-1] == ' ' || k.src[i-1] == '(' || k.src[i-1] == '\t') {
			i--
		}
		return max(i-2, 0)
	}
	return int(n.Idx0()) - k.f.Base()
}

func (k *k6conv) pos(n ast.Node) string {
	p := k.f.Position(k.start(n))
	return fmt.Sprintf("%d:%d", p.Line, p.Column)
}

// not records a construct that is not converted, and marks its place.
func (k *k6conv) not(n ast.Node, why string) {
	src := strings.TrimSpace(k.slice(n))
	if i := strings.IndexByte(src, '\n'); i >= 0 {
		src = src[:i] + " ..."
	}
	if len(src) > 60 {
		src = src[:57] + "..."
	}
	line := fmt.Sprintf("%s: %s (%s)", k.pos(n), src, why)
	if !slicesContains(k.notes, line) { // a function that two scenarios run
		k.notes = append(k.notes, line)
	}
	k.steps = append(k.steps, &k6step{comment: "# not converted: " + line})
}

func (k *k6conv) slice(n ast.Node) string {
	a, b := k.start(n), int(n.Idx1())-k.f.Base()
	if a < 0 || b > len(k.src) || a > b {
		return ""
	}
	return k.src[a:b]
}

// stripModules blanks the ES module syntax that goja's parser (a script
// parser) refuses, keeping every other byte where it was so that line:col
// stay those of the script: import declarations are parsed by hand here
// (their bindings recorded), "export " is blanked and "export default" becomes
// an assignment of the same length. It is driven by the parser's errors,
// so only a real import or export keyword at a statement's place is touched.
func (k *k6conv) parse() (*ast.Program, error) {
	src := []byte(k.src)
	for range 200 {
		prog, err := parser.ParseFile(nil, k.file, string(src), 0, parser.WithDisableSourceMaps)
		if err == nil {
			k.src = string(src)
			k.f = prog.File
			return prog, nil
		}
		var el parser.ErrorList
		if !errors.As(err, &el) || len(el) == 0 {
			return nil, fmt.Errorf("%w: %s: %v", ErrScript, k.file, err)
		}
		e := el[0]
		off := offsetOf(src, e.Position.Line, e.Position.Column)
		rest := src[off:]
		switch {
		case bytes.HasPrefix(rest, []byte("import")) && !isIdent(at(rest, 6)):
			n, err := k.importDecl(src, off)
			if err != nil {
				return nil, fmt.Errorf("%w: %s:%d:%d: %v", ErrScript, k.file, e.Position.Line, e.Position.Column, err)
			}
			blank(src[off : off+n])
		case bytes.HasPrefix(rest, []byte("export default")):
			copy(rest, "__k6default  =") // as long as "export default"
		case bytes.HasPrefix(rest, []byte("export")) && !isIdent(at(rest, 6)):
			blank(rest[:6])
		default:
			return nil, fmt.Errorf("%w: %s:%d:%d: syntax error: %s", ErrScript, k.file, e.Position.Line, e.Position.Column, e.Message)
		}
	}
	return nil, fmt.Errorf("%w: %s: too many import or export declarations", ErrScript, k.file)
}

func slicesContains(list []string, s string) bool {
	for _, l := range list {
		if l == s {
			return true
		}
	}
	return false
}

func at(b []byte, i int) byte {
	if i < len(b) {
		return b[i]
	}
	return ' '
}

func isIdent(c byte) bool {
	return c == '_' || c == '$' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

func blank(b []byte) {
	for i, c := range b {
		if c != '\n' {
			b[i] = ' '
		}
	}
}

func offsetOf(src []byte, line, col int) int {
	off := 0
	for l := 1; l < line && off < len(src); off++ {
		if src[off] == '\n' {
			l++
		}
	}
	return min(off+col-1, len(src))
}

// importDecl reads `import a from "m"`, `import { a as b, c } from "m"`,
// `import * as a from "m"` or `import "m"` at off, records what it binds, and
// returns its length (with the semicolon).
func (k *k6conv) importDecl(src []byte, off int) (int, error) {
	i := off + len("import")
	var toks []string
	var mod string
	for mod == "" {
		for i < len(src) && (src[i] == ' ' || src[i] == '\t' || src[i] == '\n' || src[i] == '\r') {
			i++
		}
		if i >= len(src) {
			return 0, errors.New("syntax error: an import declaration without its module")
		}
		switch c := src[i]; {
		case c == '"' || c == '\'':
			j := bytes.IndexByte(src[i+1:], c)
			if j < 0 {
				return 0, errors.New("syntax error: an unterminated module name")
			}
			mod = string(src[i+1 : i+1+j])
			i += j + 2
		case c == '{' || c == '}' || c == ',' || c == '*':
			toks = append(toks, string(c))
			i++
		case isIdent(c):
			j := i
			for j < len(src) && isIdent(src[j]) {
				j++
			}
			toks = append(toks, string(src[i:j]))
			i = j
		default:
			return 0, fmt.Errorf("syntax error: unexpected %q in an import declaration", c)
		}
	}
	for i < len(src) && (src[i] == ' ' || src[i] == '\t') {
		i++
	}
	if i < len(src) && src[i] == ';' {
		i++
	}
	// bindings: default name, {name [as local]}, * as local
	inBraces := false
	for t := 0; t < len(toks); t++ {
		switch tk := toks[t]; tk {
		case "{":
			inBraces = true
		case "}":
			inBraces = false
		case ",", "from":
		case "*":
			if t+2 < len(toks) {
				k.bind(mod, "*", toks[t+2])
				t += 2
			}
		default:
			local := tk
			if t+2 < len(toks) && toks[t+1] == "as" {
				local = toks[t+2]
				t += 2
			}
			if inBraces {
				k.bind(mod, tk, local)
			} else {
				k.bind(mod, "default", local)
			}
		}
	}
	return i - off, nil
}

func (k *k6conv) bind(mod, name, local string) {
	switch {
	case mod == "k6/http" && (name == "default" || name == "*"):
		k.http = local
	case mod == "k6" && (name == "check" || name == "sleep" || name == "group"):
		k.fns[local] = name
	case mod == "k6/data" && name == "SharedArray":
		k.fns[local] = name
	case strings.Contains(mod, "papaparse"):
		k.papa = local
	case strings.Contains(mod, "k6-utils") && name == "randomIntBetween":
		k.fns[local] = name
	}
}

// K6 converts a k6 script into a plan. Files the script open()s are read
// relative to the script's directory.
func K6(file string, data []byte, opts Options) (*K6Result, error) {
	k := &k6conv{file: file, src: string(data), dir: filepath.Dir(file), fns: map[string]string{"open": "open"},
		global: map[string]*k6binding{}, funcs: map[string]*ast.FunctionLiteral{}, data: map[string]string{},
		picks: map[string]string{}, files: map[string][]byte{}, stepNames: map[string]bool{}}
	prog, err := k.parse()
	if err != nil {
		return nil, err
	}
	for _, st := range prog.Body {
		k.steps = nil
		k.topLevel(st)
		k.top = append(k.top, k.steps...)
	}
	opt := map[string]any{}
	if k.options != nil {
		k.steps = nil
		v, ok := k.lit(k.options)
		if m, isMap := v.(map[string]any); ok && isMap {
			opt = m
		} else {
			k.not(k.options, "options must be an object of constants")
		}
		k.top = append(k.top, k.steps...)
	}
	var scens []*k6scenario
	k.steps = nil
	if _, ok := opt["scenarios"].(map[string]any); !ok && opt["scenarios"] != nil {
		k.not(k.optNode("scenarios"), "scenarios must be an object of name: { executor, ... }")
		k.top = append(k.top, k.steps...)
		k.steps = nil
	}
	if sc, ok := opt["scenarios"].(map[string]any); ok && len(sc) > 0 {
		names := make([]string, 0, len(sc))
		for n := range sc {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			m, _ := sc[n].(map[string]any)
			exec, _ := m["exec"].(string)
			if exec == "" {
				exec = "default"
			}
			load, why := k6load(m, str(m["executor"]))
			s := &k6scenario{name: n, exec: exec, load: load + k.extra(m, scenarioKeys, "scenarios", n)}
			if why != "" {
				line := fmt.Sprintf("%s: scenario %s: %s", k.pos(k.optNode("scenarios", n)), n, why)
				k.notes = append(k.notes, line)
				s.steps = append(s.steps, &k6step{comment: "# not converted: " + line})
			}
			scens = append(scens, s)
		}
	} else {
		ex := "constant-vus"
		switch {
		case opt["stages"] != nil:
			ex = "ramping-vus"
			if opt["startVUs"] == nil {
				opt["startVUs"] = num(opt["vus"], 1)
			}
		case opt["iterations"] != nil:
			ex = "shared-iterations"
		case opt["duration"] == nil: // k6: one iteration, shared
			ex = "shared-iterations"
			opt["iterations"] = 1.0
		}
		load, why := k6load(opt, ex)
		s := &k6scenario{name: "default", exec: "default", load: load + k.extra(opt, optionKeys)}
		if why != "" {
			line := fmt.Sprintf("%s: options: %s", k.pos(k.options), why)
			k.notes = append(k.notes, line)
			s.steps = append(s.steps, &k6step{comment: "# not converted: " + line})
		}
		scens = append(scens, s)
	}
	total := 0
	for _, s := range scens {
		fn := k.funcs[s.exec]
		if fn == nil {
			return nil, fmt.Errorf("%w: %s: no function %s to run (k6 runs the default export, or a scenario's exec)", ErrScript, file, s.exec)
		}
		k.steps = s.steps
		k.block(fn.Body.List, map[string]*k6binding{})
		s.steps = k.steps
		for _, st := range s.steps {
			if st.method != "" {
				total++
			}
			if st.name != "" {
				k.stepNames[st.name] = true
			}
		}
	}
	if total == 0 {
		if len(k.notes) > 0 {
			return nil, fmt.Errorf("%w: %s: no http requests to convert (%d parts not converted, the first: %s)", ErrScript, file, len(k.notes), k.notes[0])
		}
		return nil, fmt.Errorf("%w: %s: no http requests to convert", ErrScript, file)
	}
	var thr []string
	if t, ok := opt["thresholds"].(map[string]any); ok {
		thr = k.thresholds(t)
	} else if opt["thresholds"] != nil {
		line := k.pos(k.optNode("thresholds")) + ": thresholds must be an object of metric: [expressions]"
		k.notes = append(k.notes, line)
		thr = append(thr, "# not converted: "+line)
	}
	if k.checks && !k.checksThr {
		thr = append(thr, "checks >= 0%   # k6's failed checks do not fail a run; loadlab's do unless a checks threshold says otherwise")
	}
	if opts.Target != "" {
		t, err := url.Parse(opts.Target)
		if err != nil || (t.Scheme != "http" && t.Scheme != "https") || t.Host == "" {
			return nil, fmt.Errorf("%w: target %q: want an http:// or https:// URL", ErrScript, opts.Target)
		}
		k.origin = t.Scheme + "://" + t.Host
	}
	sort.SliceStable(k.notes, func(i, j int) bool { return noteOrder(k.notes[i]) < noteOrder(k.notes[j]) })
	res := &K6Result{Files: k.files, NotConverted: k.notes}
	res.Target = k.origin
	res.Steps = total
	res.Plan = k.write(k.top, scens, thr, false)
	res.CheckPlan = k.write(k.top, scens, nil, true)
	return res, nil
}

// optNode is the node of options.KEY.KEY..., or options itself.
func (k *k6conv) optNode(keys ...string) ast.Node {
	n, _ := k.optProp(keys...)
	return n
}

// optProp is optNode, and the property (KEY: value) of the last key.
func (k *k6conv) optProp(keys ...string) (ast.Node, ast.Node) {
	var n, prop ast.Node = k.options, k.options
	for _, key := range keys {
		o, ok := n.(*ast.ObjectLiteral)
		if !ok {
			return n, n
		}
		found := false
		for _, p := range o.Value {
			if pk, ok := p.(*ast.PropertyKeyed); ok {
				if name, _ := propKey(pk); name == key {
					n, prop, found = pk.Value, pk, true
					break
				}
			}
		}
		if !found {
			return n, n
		}
	}
	return n, prop
}

// qq quotes for YAML as q does, without escaping <, > and &.
func qq(s string) string {
	var b bytes.Buffer
	e := json.NewEncoder(&b)
	e.SetEscapeHTML(false)
	e.Encode(s)
	return strings.TrimSuffix(b.String(), "\n")
}

// noteOrder orders "line:col: ..." notes.
func noteOrder(s string) int {
	l, rest, _ := strings.Cut(s, ":")
	c, _, _ := strings.Cut(rest, ":")
	ln, _ := strconv.Atoi(l)
	cn, _ := strconv.Atoi(c)
	return ln<<20 + cn
}

func str(v any) string { s, _ := v.(string); return s }

func num(v any, def float64) float64 {
	if f, ok := v.(float64); ok {
		return f
	}
	return def
}

func dur(v any) (string, bool) {
	s, ok := v.(string)
	if !ok {
		return "", false
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return "", false
	}
	return d.String(), true
}

func n(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

var (
	optionKeys   = []string{"vus", "duration", "iterations", "stages", "startVUs", "scenarios", "thresholds"}
	scenarioKeys = []string{"executor", "exec", "vus", "duration", "iterations", "stages", "startVUs", "rate", "timeUnit", "preAllocatedVUs", "maxVUs", "startRate"}
)

// extra lists the options (at path) that the load does not use as not
// converted, but gracefulStop, which is the load's grace.
func (k *k6conv) extra(m map[string]any, known []string, path ...string) string {
	keys := make([]string, 0, len(m))
	for key := range m {
		if !slicesContains(known, key) {
			keys = append(keys, key)
		}
	}
	sort.Strings(keys)
	grace := ""
	for _, key := range keys {
		if d, ok := dur(m[key]); ok && key == "gracefulStop" {
			grace = "\n  grace: " + d
			continue
		}
		k.steps = nil
		_, prop := k.optProp(append(path, key)...)
		k.not(prop, "option "+key+" has no loadlab equivalent")
		k.top = append(k.top, k.steps...)
	}
	k.steps = nil
	return grace
}

// k6load maps a k6 executor's options to a loadlab load (flow YAML), and
// says why when it cannot: then the load is one iteration of one VU.
func k6load(m map[string]any, ex string) (string, string) {
	load, why := k6load1(m, ex)
	if load == "" {
		return "closed: { vus: 1, iterations: 1 }", why + "; the plan runs one iteration"
	}
	return load, why
}

func k6load1(m map[string]any, ex string) (string, string) {
	vus := num(m["vus"], 1)
	switch ex {
	case "constant-vus":
		d, ok := dur(m["duration"])
		if !ok {
			return "", "constant-vus needs a duration"
		}
		return fmt.Sprintf("closed: { vus: %s, duration: %s }", n(vus), d), ""
	case "per-vu-iterations":
		it := num(m["iterations"], 1)
		return fmt.Sprintf("closed: { vus: %s, iterations: %s }", n(vus), n(it)), ""
	case "shared-iterations":
		it := num(m["iterations"], 1)
		if vus <= 0 || it/vus != float64(int(it/vus)) {
			return fmt.Sprintf("closed: { vus: %s, iterations: %s }", n(vus), n(max(1, float64(int(it/vus))))),
				fmt.Sprintf("shared-iterations: %s iterations do not share evenly among %s VUs; the plan runs %s per VU", n(it), n(vus), n(max(1, float64(int(it/vus)))))
		}
		return fmt.Sprintf("closed: { vus: %s, iterations: %s }   # k6 shared-iterations: %s in all", n(vus), n(it/vus), n(it)), ""
	case "ramping-vus":
		st, ok := m["stages"].([]any)
		if !ok {
			return "", "ramping-vus needs stages"
		}
		parts := []string{fmt.Sprintf("{ vus: %s }", n(num(m["startVUs"], 1)))}
		for _, s := range st {
			sm, _ := s.(map[string]any)
			d, ok := dur(sm["duration"])
			if !ok {
				return "", "a stage needs a duration"
			}
			parts = append(parts, fmt.Sprintf("{ ramp: %s, over: %s }", n(num(sm["target"], 0)), d))
		}
		return "stages: [ " + strings.Join(parts, ", ") + " ]", ""
	case "constant-arrival-rate", "ramping-arrival-rate":
		unit := "1s"
		if u, ok := dur(m["timeUnit"]); ok {
			unit = u
		}
		maxVUs := num(m["maxVUs"], num(m["preAllocatedVUs"], 1))
		if ex == "constant-arrival-rate" {
			d, ok := dur(m["duration"])
			if !ok {
				return "", "constant-arrival-rate needs a duration"
			}
			return fmt.Sprintf("open: { rate: %s/%s, max_vus: %s, duration: %s }", n(num(m["rate"], 1)), unit, n(maxVUs), d), ""
		}
		st, _ := m["stages"].([]any)
		parts := []string{fmt.Sprintf("{ rate: %s/%s }", n(num(m["startRate"], 0)), unit)}
		for _, s := range st {
			sm, _ := s.(map[string]any)
			d, ok := dur(sm["duration"])
			if !ok {
				return "", "a stage needs a duration"
			}
			parts = append(parts, fmt.Sprintf("{ ramp: %s/%s, over: %s }", n(num(sm["target"], 0)), unit, d))
		}
		return fmt.Sprintf("max_vus: %s\n  stages: [ %s ]", n(maxVUs), strings.Join(parts, ", ")), ""
	}
	return "closed: { vus: 1, iterations: 1 }", fmt.Sprintf("executor %q has no loadlab equivalent; the plan runs one iteration", ex)
}

var k6metrics = map[string]string{
	"http_req_duration": "latency", "http_req_waiting": "ttfb", "http_req_connecting": "connect",
	"http_req_tls_handshaking": "tls", "http_req_failed": "error_rate", "checks": "checks",
	"http_reqs": "requests", "iterations": "iterations", "dropped_iterations": "dropped",
}

// thresholds translates k6 thresholds into loadlab's grammar.
func (k *k6conv) thresholds(t map[string]any) []string {
	keys := make([]string, 0, len(t))
	for key := range t {
		keys = append(keys, key)
	}
	sort.Strings(keys)
	var out []string
	for _, key := range keys {
		metric, tags, _ := strings.Cut(key, "{")
		tags = strings.TrimSuffix(tags, "}")
		lm, ok := k6metrics[metric]
		var filters []string
		for _, tg := range strings.Split(tags, ",") {
			if tg == "" {
				continue
			}
			tk, tv, _ := strings.Cut(tg, ":")
			tv = strings.TrimSpace(tv)
			switch strings.TrimSpace(tk) {
			case "name":
				filters = append(filters, "step="+qq(tv))
				ok = ok && k.stepNames[tv]
			case "scenario":
				filters = append(filters, "scenario="+tv)
			default:
				ok = false
			}
		}
		list, isList := t[key].([]any)
		if !isList {
			list = []any{t[key]}
		}
		for _, it := range list {
			expr := str(it)
			if m, isMap := it.(map[string]any); isMap {
				expr = str(m["threshold"])
				if m["abortOnFail"] == true {
					line := fmt.Sprintf("%s: threshold %s: %q: abortOnFail (loadlab judges thresholds at the end; the threshold is kept)", k.pos(k.optNode("thresholds", key)), key, expr)
					k.notes = append(k.notes, line)
					out = append(out, "# not converted: "+line)
				}
			}
			th, good := "", ok
			if good {
				th, good = k6threshold(lm, filters, expr)
			}
			if !good {
				line := fmt.Sprintf("%s: threshold %s: %q (no loadlab equivalent, or no step of that name)", k.pos(k.optNode("thresholds", key)), key, expr)
				k.notes = append(k.notes, line)
				out = append(out, "# not converted: "+line)
				continue
			}
			if lm == "checks" {
				k.checksThr = true
			}
			out = append(out, th)
		}
	}
	return out
}

func k6threshold(metric string, filters []string, expr string) (string, bool) {
	e := strings.ReplaceAll(expr, " ", "")
	i := strings.IndexAny(e, "<>=!")
	if i <= 0 {
		return "", false
	}
	agg, rest := e[:i], e[i:]
	op := rest[:1]
	if len(rest) > 1 && rest[1] == '=' {
		op = rest[:2]
	}
	if op != "<" && op != "<=" && op != ">" && op != ">=" {
		return "", false
	}
	v, err := strconv.ParseFloat(rest[len(op):], 64)
	if err != nil {
		return "", false
	}
	args := strings.Join(append([]string{metric}, filters...), ", ")
	switch metric {
	case "latency", "ttfb", "connect", "tls":
		name := agg
		switch {
		case strings.HasPrefix(agg, "p(") && strings.HasSuffix(agg, ")"):
			name = "p" + strings.TrimSuffix(strings.TrimPrefix(agg, "p("), ")")
		case agg == "avg" || agg == "min" || agg == "max" || agg == "med":
		default:
			return "", false
		}
		return fmt.Sprintf("%s(%s) %s %sms", name, args, op, n(v)), true
	case "error_rate", "checks":
		if agg != "rate" {
			return "", false
		}
		return fmt.Sprintf("%s %s %s%%", withFilters(metric, filters), op, n(v*100)), true
	case "requests", "iterations", "dropped":
		switch {
		case agg == "count":
			return fmt.Sprintf("%s %s %s", withFilters(metric, filters), op, n(v)), true
		case agg == "rate" && metric == "requests":
			return fmt.Sprintf("%s %s %s/s", withFilters("rate", filters), op, n(v)), true
		}
	}
	return "", false
}

func withFilters(m string, f []string) string {
	if len(f) == 0 {
		return m
	}
	return m + "(" + strings.Join(f, ", ") + ")"
}

// topLevel handles a statement of the init context.
func (k *k6conv) topLevel(st ast.Statement) {
	switch s := st.(type) {
	case *ast.FunctionDeclaration:
		k.funcs[string(s.Function.Name.Name)] = s.Function
		if nm := s.Function.Name.Name; nm == "setup" || nm == "teardown" || nm == "handleSummary" {
			k.not(s, nm.String()+" has no loadlab equivalent")
		}
	case *ast.ExpressionStatement:
		if a, ok := s.Expression.(*ast.AssignExpression); ok {
			if id, ok := a.Left.(*ast.Identifier); ok && id.Name == "__k6default" {
				switch f := a.Right.(type) {
				case *ast.FunctionLiteral:
					k.funcs["default"] = f
					return
				case *ast.ArrowFunctionLiteral:
					if b, ok := f.Body.(*ast.BlockStatement); ok {
						k.funcs["default"] = &ast.FunctionLiteral{Body: b}
						return
					}
				case *ast.Identifier:
					if fn := k.funcs[string(f.Name)]; fn != nil {
						k.funcs["default"] = fn
						return
					}
				}
			}
		}
		k.not(s, "a statement of the init context")
	case *ast.LexicalDeclaration:
		k.decls(s.List, k.global, true)
	case *ast.VariableStatement:
		k.decls(s.List, k.global, true)
	case *ast.EmptyStatement:
	default:
		k.not(st, "a statement of the init context")
	}
}

func (k *k6conv) decls(list []*ast.Binding, scope map[string]*k6binding, global bool) {
	for _, b := range list {
		id, ok := b.Target.(*ast.Identifier)
		if !ok || b.Initializer == nil {
			k.not(b, "a destructuring declaration")
			continue
		}
		name := string(id.Name)
		if name == "options" && global {
			k.options = b.Initializer
			continue
		}
		if fn, ok := b.Initializer.(*ast.FunctionLiteral); ok && global {
			k.funcs[name] = fn
			continue
		}
		if fn, ok := b.Initializer.(*ast.ArrowFunctionLiteral); ok && global {
			if body, ok := fn.Body.(*ast.BlockStatement); ok {
				k.funcs[name] = &ast.FunctionLiteral{Body: body}
				continue
			}
		}
		if ne, ok := b.Initializer.(*ast.NewExpression); ok && k.callee(ne.Callee) == "SharedArray" {
			k.sharedArray(name, ne)
			continue
		}
		if cp, st := k.responseValue(b.Initializer, scope); st != nil {
			if cp.kind == "" {
				k.not(b, "a response's value other than res.json(PATH), res.json().PATH or res.headers[NAME]")
				continue
			}
			cp.name = name
			st.captures = append(st.captures, cp)
			scope[name] = &k6binding{expr: name}
			continue
		}
		if c, ok := b.Initializer.(*ast.CallExpression); ok && !global {
			if st := k.call(c, scope); st != nil {
				scope[name] = &k6binding{res: st}
			}
			continue
		}
		if br, ok := b.Initializer.(*ast.BracketExpression); ok {
			if src := k.dataSource(br.Left, scope); src != "" {
				k.pickOf(src, br.Member)
				scope[name] = &k6binding{row: src}
				continue
			}
		}
		if _, ok := b.Initializer.(*ast.ObjectLiteral); ok {
			scope[name] = &k6binding{node: b.Initializer}
			continue
		}
		if t, ok := k.tmpl(b.Initializer, scope); ok {
			scope[name] = &k6binding{tmpl: t}
			continue
		}
		k.not(b, "a value the plan cannot compute")
	}
}

// responseValue reads res.json("a.b"), res.json().a.b and
// res.headers["Name"] (or .Name) of a response: a capture on its step.
// A response's step with an empty capture is a value of it not understood.
func (k *k6conv) responseValue(e ast.Expression, scope map[string]*k6binding) (capture, *k6step) {
	resOf := func(e ast.Expression) *k6step {
		if id, ok := e.(*ast.Identifier); ok {
			if b := k.lookup(string(id.Name), scope); b != nil {
				return b.res
			}
		}
		return nil
	}
	var path []string
	for {
		switch v := e.(type) {
		case *ast.DotExpression:
			if st := resOf(v.Left); st != nil {
				if v.Identifier.Name == "body" && len(path) == 0 {
					return capture{kind: "regex", arg: "(?s).*"}, st
				}
				if v.Identifier.Name == "headers" && len(path) == 1 {
					return capture{kind: "header", arg: path[0]}, st
				}
				return capture{}, st
			}
			path = append([]string{string(v.Identifier.Name)}, path...)
			e = v.Left
			continue
		case *ast.BracketExpression:
			key, ok := v.Member.(*ast.StringLiteral)
			if ok {
				if st := resOf(v.Left); st != nil {
					return capture{}, st
				}
				if d, ok := v.Left.(*ast.DotExpression); ok && d.Identifier.Name == "headers" {
					if st := resOf(d.Left); st != nil && len(path) == 0 {
						return capture{kind: "header", arg: string(key.Value)}, st
					}
				}
				path = append([]string{string(key.Value)}, path...)
				e = v.Left
				continue
			}
			if n, ok := v.Member.(*ast.NumberLiteral); ok {
				path = append([]string{"[" + n.Literal + "]"}, path...)
				e = v.Left
				continue
			}
		case *ast.CallExpression:
			d, ok := v.Callee.(*ast.DotExpression)
			if !ok || d.Identifier.Name != "json" {
				return capture{}, nil
			}
			st := resOf(d.Left)
			if st == nil {
				return capture{}, nil
			}
			if len(v.ArgumentList) == 1 {
				if a, ok := v.ArgumentList[0].(*ast.StringLiteral); ok && len(path) == 0 {
					path = strings.Split(string(a.Value), ".")
				} else {
					return capture{}, st
				}
			}
			if len(path) == 0 {
				return capture{}, st
			}
			jp := "$"
			for _, p := range path {
				if strings.HasPrefix(p, "[") {
					jp += p
				} else if _, err := strconv.Atoi(p); err == nil {
					jp += "[" + p + "]"
				} else {
					jp += "." + p
				}
			}
			return capture{kind: "json", arg: jp}, st
		}
		return capture{}, nil
	}
}

func (k *k6conv) callee(e ast.Expression) string {
	if id, ok := e.(*ast.Identifier); ok {
		return k.fns[string(id.Name)]
	}
	return ""
}

// sharedArray reads new SharedArray(name, function () { return
// JSON.parse(open(FILE)) }) or papaparse.parse(open(FILE), { header: true }).data.
func (k *k6conv) sharedArray(name string, ne *ast.NewExpression) {
	var ret ast.Expression
	if len(ne.ArgumentList) == 2 {
		var body *ast.BlockStatement
		switch f := ne.ArgumentList[1].(type) {
		case *ast.FunctionLiteral:
			body = f.Body
		case *ast.ArrowFunctionLiteral:
			if eb, ok := f.Body.(*ast.ExpressionBody); ok {
				ret = eb.Expression
			} else {
				body, _ = f.Body.(*ast.BlockStatement)
			}
		}
		if body != nil && len(body.List) == 1 {
			if r, ok := body.List[0].(*ast.ReturnStatement); ok {
				ret = r.Argument
			}
		}
	}
	fail := func(why string) { k.not(ne, why) }
	openOf := func(e ast.Expression) string {
		c, ok := e.(*ast.CallExpression)
		if !ok || k.callee(c.Callee) != "open" || len(c.ArgumentList) < 1 {
			return ""
		}
		s, _ := c.ArgumentList[0].(*ast.StringLiteral)
		if s == nil {
			return ""
		}
		return string(s.Value)
	}
	var path string
	var isJSON bool
	switch r := ret.(type) {
	case *ast.CallExpression: // JSON.parse(open(f))
		if d, ok := r.Callee.(*ast.DotExpression); ok && d.Identifier.Name == "parse" && len(r.ArgumentList) == 1 {
			if id, ok := d.Left.(*ast.Identifier); ok && id.Name == "JSON" {
				path, isJSON = openOf(r.ArgumentList[0]), true
			}
		}
	case *ast.DotExpression: // papaparse.parse(open(f), {header: true}).data
		if c, ok := r.Left.(*ast.CallExpression); ok && r.Identifier.Name == "data" && len(c.ArgumentList) >= 1 {
			if d, ok := c.Callee.(*ast.DotExpression); ok && d.Identifier.Name == "parse" {
				if id, ok := d.Left.(*ast.Identifier); ok && string(id.Name) == k.papa && k.papa != "" {
					path = openOf(c.ArgumentList[0])
				}
			}
		}
	}
	if path == "" {
		fail("a SharedArray other than JSON.parse(open(FILE)) or papaparse.parse(open(FILE), { header: true }).data")
		return
	}
	raw, err := os.ReadFile(filepath.Join(k.dir, path))
	if err != nil {
		fail(err.Error())
		return
	}
	out := strings.TrimSuffix(filepath.Base(path), filepath.Ext(path)) + ".csv"
	if isJSON {
		raw, err = jsonToCSV(raw)
		if err != nil {
			fail(fmt.Sprintf("%s: %v", path, err))
			return
		}
	}
	k.files[out] = raw
	k.data[name] = out
	k.order = append(k.order, name)
	k.global[name] = &k6binding{source: name}
}

// jsonToCSV turns a JSON array of flat objects into CSV with a header row.
func jsonToCSV(raw []byte) ([]byte, error) {
	var rows []map[string]any
	if err := json.Unmarshal(raw, &rows); err != nil {
		return nil, fmt.Errorf("want an array of objects: %w", err)
	}
	if len(rows) == 0 {
		return nil, errors.New("no rows")
	}
	var cols []string
	for c := range rows[0] {
		cols = append(cols, c)
	}
	sort.Strings(cols)
	var b bytes.Buffer
	w := csv.NewWriter(&b)
	w.Write(cols)
	for _, r := range rows {
		rec := make([]string, len(cols))
		for i, c := range cols {
			switch v := r[c].(type) {
			case string:
				rec[i] = v
			case nil:
			default:
				j, _ := json.Marshal(v)
				rec[i] = string(j)
			}
		}
		w.Write(rec)
	}
	w.Flush()
	return b.Bytes(), w.Error()
}

func (k *k6conv) dataSource(e ast.Expression, scope map[string]*k6binding) string {
	if id, ok := e.(*ast.Identifier); ok {
		if b := k.lookup(string(id.Name), scope); b != nil {
			return b.source
		}
	}
	return ""
}

// pickOf reads how a row is picked: data[__VU - 1] or data[__VU % n] is the
// VU's own row, Math.random() a random one, anything else sequential.
func (k *k6conv) pickOf(src string, idx ast.Expression) {
	s := k.slice(idx)
	pick := "sequential"
	switch {
	case strings.Contains(s, "Math.random"):
		pick = "random"
	case strings.Contains(s, "__VU"):
		pick = "vu"
	}
	k.picks[src] = pick
}

func (k *k6conv) lookup(name string, scope map[string]*k6binding) *k6binding {
	if b := scope[name]; b != nil {
		return b
	}
	return k.global[name]
}

// block converts the statements of a VU function.
func (k *k6conv) block(list []ast.Statement, scope map[string]*k6binding) {
	for _, st := range list {
		switch s := st.(type) {
		case *ast.ExpressionStatement:
			c, ok := s.Expression.(*ast.CallExpression)
			if !ok {
				k.not(s, "not a call of k6's API")
				continue
			}
			k.call(c, scope)
		case *ast.LexicalDeclaration:
			k.decls(s.List, scope, false)
		case *ast.VariableStatement:
			k.decls(s.List, scope, false)
		case *ast.EmptyStatement:
		default:
			k.not(st, "control flow has no plan equivalent")
		}
	}
}

// call converts a call; an HTTP request returns its step.
func (k *k6conv) call(c *ast.CallExpression, scope map[string]*k6binding) *k6step {
	if d, ok := c.Callee.(*ast.DotExpression); ok {
		if id, ok := d.Left.(*ast.Identifier); ok && string(id.Name) == k.http && k.http != "" {
			return k.request(c, string(d.Identifier.Name), scope)
		}
	}
	switch k.callee(c.Callee) {
	case "sleep":
		if len(c.ArgumentList) == 1 {
			if lo, hi, ok := k.seconds(c.ArgumentList[0]); ok && lo >= 0 && hi >= lo {
				th := secs(lo)
				if hi > lo {
					th += ".." + secs(hi)
				}
				k.steps = append(k.steps, &k6step{think: th})
				return nil
			}
		}
		k.not(c, "sleep takes seconds: N, Math.random() * N, N + ..., randomIntBetween(A, B)")
	case "check":
		k.check(c, scope)
	case "group":
		if len(c.ArgumentList) == 2 {
			name, _ := c.ArgumentList[0].(*ast.StringLiteral)
			var body *ast.BlockStatement
			switch f := c.ArgumentList[1].(type) {
			case *ast.FunctionLiteral:
				body = f.Body
			case *ast.ArrowFunctionLiteral:
				body, _ = f.Body.(*ast.BlockStatement)
			}
			if name != nil && body != nil {
				k.steps = append(k.steps, &k6step{comment: "# group: " + string(name.Value)})
				k.block(body.List, scope)
				return nil
			}
		}
		k.not(c, "group(name, function)")
	default:
		k.not(c, "not a call of k6's API")
	}
	return nil
}

func secs(f float64) string { return time.Duration(f * float64(time.Second)).String() }

// seconds reads sleep's argument as a range of seconds: a number,
// Math.random() * N (uniform in 0..N, as loadlab's think range), a sum of
// those, or k6-utils' randomIntBetween(A, B).
func (k *k6conv) seconds(e ast.Expression) (lo, hi float64, ok bool) {
	isRandom := func(e ast.Expression) bool {
		c, ok := e.(*ast.CallExpression)
		if !ok || len(c.ArgumentList) != 0 {
			return false
		}
		d, ok := c.Callee.(*ast.DotExpression)
		if !ok || d.Identifier.Name != "random" {
			return false
		}
		id, ok := d.Left.(*ast.Identifier)
		return ok && id.Name == "Math"
	}
	number := func(e ast.Expression) (float64, bool) {
		if nl, ok := e.(*ast.NumberLiteral); ok {
			return toFloat(nl.Value)
		}
		return 0, false
	}
	switch v := e.(type) {
	case *ast.NumberLiteral:
		f, ok := toFloat(v.Value)
		return f, f, ok
	case *ast.BinaryExpression:
		switch v.Operator {
		case token.MULTIPLY:
			if f, ok := number(v.Right); ok && isRandom(v.Left) {
				return 0, f, true
			}
			if f, ok := number(v.Left); ok && isRandom(v.Right) {
				return 0, f, true
			}
		case token.PLUS:
			a, b, ok := k.seconds(v.Left)
			c, d, ok2 := k.seconds(v.Right)
			return a + c, b + d, ok && ok2
		}
	case *ast.CallExpression:
		if k.callee(v.Callee) == "randomIntBetween" && len(v.ArgumentList) == 2 {
			a, ok := number(v.ArgumentList[0])
			b, ok2 := number(v.ArgumentList[1])
			return a, b, ok && ok2
		}
	}
	return 0, 0, false
}

func toFloat(v any) (float64, bool) {
	switch x := v.(type) {
	case float64:
		return x, true
	case int64:
		return float64(x), true
	}
	return 0, false
}

func (k *k6conv) request(c *ast.CallExpression, fn string, scope map[string]*k6binding) *k6step {
	args := c.ArgumentList
	method := strings.ToUpper(fn)
	switch fn {
	case "del":
		method = "DELETE"
	case "request":
		if len(args) == 0 {
			k.not(c, "http.request without a method")
			return nil
		}
		m, ok := args[0].(*ast.StringLiteral)
		if !ok {
			k.not(c, "http.request's method must be a string")
			return nil
		}
		method, args = strings.ToUpper(string(m.Value)), args[1:]
	case "get", "post", "put", "patch", "head", "options":
	default:
		k.not(c, "http."+fn+" has no plan equivalent")
		return nil
	}
	if len(args) == 0 {
		k.not(c, "a request without a URL")
		return nil
	}
	u, ok := k.tmpl(args[0], scope)
	if !ok {
		k.not(c, "its URL is not made of strings, __VU, __ITER, __ENV and data")
		return nil
	}
	st := &k6step{method: method, url: k.relative(u)}
	if strings.HasPrefix(st.url, "{{") {
		k.not(c, "its host is a template, and not the target's")
		return nil
	}
	var body, params ast.Expression
	if method == "GET" || method == "HEAD" || method == "OPTIONS" {
		if len(args) > 1 {
			params = args[1]
		}
	} else {
		if len(args) > 1 {
			body = args[1]
		}
		if len(args) > 2 {
			params = args[2]
		}
	}
	if body != nil {
		if !k.body(st, body, scope) {
			k.not(body, "a request body the plan cannot send")
			return nil
		}
	}
	if params != nil {
		if !k.params(st, params, scope) {
			k.not(params, "request params other than headers, tags.name and redirects")
		}
	}
	k.steps = append(k.steps, st)
	return st
}

// relative keeps the first request's origin as the target and makes URLs on
// it relative.
func (k *k6conv) relative(u string) string {
	pu, err := url.Parse(u)
	if err != nil || pu.Host == "" || strings.Contains(pu.Host, "{") {
		if strings.HasPrefix(u, "{{ env.") {
			if i := strings.Index(u, "}}"); i > 0 && k.origin == "" || k.origin == u[:i+2] {
				k.origin = u[:i+2]
				return u[i+2:]
			}
		}
		return u
	}
	o := pu.Scheme + "://" + pu.Host
	if k.origin == "" {
		k.origin = o
	}
	if o == k.origin {
		rest := strings.TrimPrefix(u, o)
		if rest == "" {
			rest = "/"
		}
		return rest
	}
	return u
}

func (k *k6conv) body(st *k6step, e ast.Expression, scope map[string]*k6binding) bool {
	if id, ok := e.(*ast.Identifier); ok {
		if b := k.lookup(string(id.Name), scope); b != nil && b.node != nil {
			e = b.node
		}
	}
	switch b := e.(type) {
	case *ast.NullLiteral:
		return true
	case *ast.ObjectLiteral:
		for _, p := range b.Value {
			pk, ok := p.(*ast.PropertyKeyed)
			if !ok {
				return false
			}
			key, ok := propKey(pk)
			v, ok2 := k.tmpl(pk.Value, scope)
			if !ok || !ok2 {
				return false
			}
			st.form = append(st.form, kv{key, v})
		}
		return true
	case *ast.CallExpression:
		if d, ok := b.Callee.(*ast.DotExpression); ok && d.Identifier.Name == "stringify" && len(b.ArgumentList) == 1 {
			if id, ok := d.Left.(*ast.Identifier); ok && id.Name == "JSON" {
				arg := b.ArgumentList[0]
				if id, ok := arg.(*ast.Identifier); ok {
					if bb := k.lookup(string(id.Name), scope); bb != nil && bb.node != nil {
						arg = bb.node
					}
				}
				v, ok := k.jsonTmpl(arg, scope)
				st.json = v
				return ok
			}
		}
	}
	t, ok := k.tmpl(e, scope)
	if ok {
		st.body = &t
	}
	return ok
}

func propKey(p *ast.PropertyKeyed) (string, bool) {
	switch key := p.Key.(type) {
	case *ast.StringLiteral:
		return string(key.Value), true
	case *ast.Identifier:
		return string(key.Name), true
	case *ast.NumberLiteral:
		return key.Literal, true
	}
	return "", false
}

func (k *k6conv) jsonTmpl(e ast.Expression, scope map[string]*k6binding) (any, bool) {
	switch v := e.(type) {
	case *ast.ObjectLiteral:
		m := map[string]any{}
		for _, p := range v.Value {
			pk, ok := p.(*ast.PropertyKeyed)
			if !ok {
				return nil, false
			}
			key, ok := propKey(pk)
			val, ok2 := k.jsonTmpl(pk.Value, scope)
			if !ok || !ok2 {
				return nil, false
			}
			m[key] = val
		}
		return m, true
	case *ast.ArrayLiteral:
		var a []any
		for _, x := range v.Value {
			val, ok := k.jsonTmpl(x, scope)
			if !ok {
				return nil, false
			}
			a = append(a, val)
		}
		return a, true
	case *ast.NumberLiteral:
		f, ok := toFloat(v.Value)
		return f, ok
	case *ast.BooleanLiteral:
		return v.Value, true
	case *ast.NullLiteral:
		return nil, true
	}
	return k.tmpl(e, scope)
}

func (k *k6conv) params(st *k6step, e ast.Expression, scope map[string]*k6binding) bool {
	if id, ok := e.(*ast.Identifier); ok {
		if b := k.lookup(string(id.Name), scope); b != nil && b.node != nil {
			e = b.node
		}
	}
	o, ok := e.(*ast.ObjectLiteral)
	if !ok {
		return false
	}
	good := true
	for _, p := range o.Value {
		pk, ok := p.(*ast.PropertyKeyed)
		if !ok {
			return false
		}
		key, _ := propKey(pk)
		switch key {
		case "headers", "tags":
			m, ok := pk.Value.(*ast.ObjectLiteral)
			if !ok {
				return false
			}
			for _, hp := range m.Value {
				hk, ok := hp.(*ast.PropertyKeyed)
				if !ok {
					return false
				}
				name, _ := propKey(hk)
				v, ok := k.tmpl(hk.Value, scope)
				if !ok {
					return false
				}
				switch {
				case key == "headers" && !strings.EqualFold(name, "cookie"):
					st.headers = append(st.headers, kv{name, v})
				case key == "tags" && name == "name":
					st.name = v
				default:
					good = false
				}
			}
		case "redirects":
			if nl, ok := pk.Value.(*ast.NumberLiteral); ok && nl.Literal == "0" {
				st.noFollow = true
			} else {
				good = false
			}
		default:
			good = false
		}
	}
	return good
}

// check converts check(res, { name: (r) => r.status === N | r.body.includes(S) }).
func (k *k6conv) check(c *ast.CallExpression, scope map[string]*k6binding) {
	if len(c.ArgumentList) != 2 {
		k.not(c, "check(response, { name: function })")
		return
	}
	id, ok := c.ArgumentList[0].(*ast.Identifier)
	var b *k6binding
	if ok {
		b = k.lookup(string(id.Name), scope)
	}
	o, ok2 := c.ArgumentList[1].(*ast.ObjectLiteral)
	if b == nil || b.res == nil || !ok2 {
		k.not(c, "check of something other than a response")
		return
	}
	for _, p := range o.Value {
		pk, ok := p.(*ast.PropertyKeyed)
		if !ok || !k.checkFn(b.res, pk.Value) {
			k.not(p, "a check other than r.status === N or r.body.includes(TEXT)")
			continue
		}
		k.checks = true
	}
}

func (k *k6conv) checkFn(st *k6step, e ast.Expression) bool {
	var body ast.Expression
	switch f := e.(type) {
	case *ast.ArrowFunctionLiteral:
		switch b := f.Body.(type) {
		case *ast.ExpressionBody:
			body = b.Expression
		case *ast.BlockStatement:
			if len(b.List) == 1 {
				if r, ok := b.List[0].(*ast.ReturnStatement); ok {
					body = r.Argument
				}
			}
		}
	case *ast.FunctionLiteral:
		if len(f.Body.List) == 1 {
			if r, ok := f.Body.List[0].(*ast.ReturnStatement); ok {
				body = r.Argument
			}
		}
	}
	switch x := body.(type) {
	case *ast.BinaryExpression:
		if x.Operator != token.STRICT_EQUAL && x.Operator != token.EQUAL {
			return false
		}
		d, ok := x.Left.(*ast.DotExpression)
		nl, ok2 := x.Right.(*ast.NumberLiteral)
		if ok && ok2 && d.Identifier.Name == "status" {
			f, _ := toFloat(nl.Value)
			if st.status != 0 && st.status != int(f) {
				return false
			}
			st.status = int(f)
			return true
		}
	case *ast.CallExpression:
		d, ok := x.Callee.(*ast.DotExpression)
		if ok && d.Identifier.Name == "includes" && len(x.ArgumentList) == 1 {
			if bd, ok := d.Left.(*ast.DotExpression); ok && bd.Identifier.Name == "body" {
				if s, ok := x.ArgumentList[0].(*ast.StringLiteral); ok {
					st.contains = append(st.contains, escapeBraces(string(s.Value)))
					return true
				}
			}
		}
	}
	return false
}

// tmpl gives a plan template for a string expression: literals, template
// literals, +, __VU, __ITER, __ENV.X, constants and data rows' fields.
func (k *k6conv) tmpl(e ast.Expression, scope map[string]*k6binding) (string, bool) {
	switch v := e.(type) {
	case *ast.StringLiteral:
		return escapeBraces(string(v.Value)), true
	case *ast.NumberLiteral:
		return v.Literal, true
	case *ast.TemplateLiteral:
		if v.Tag != nil {
			return "", false
		}
		var b strings.Builder
		for i, el := range v.Elements {
			b.WriteString(escapeBraces(string(el.Parsed)))
			if i < len(v.Expressions) {
				t, ok := k.tmpl(v.Expressions[i], scope)
				if !ok {
					return "", false
				}
				b.WriteString(t)
			}
		}
		return b.String(), true
	case *ast.BinaryExpression:
		if v.Operator == token.PLUS {
			if x, ok := k.expr(e, scope); ok && !strings.Contains(k.slice(e), "'") && !strings.Contains(k.slice(e), "\"") && !strings.Contains(k.slice(e), "`") {
				return "{{ " + x + " }}", true
			}
			l, ok := k.tmpl(v.Left, scope)
			r, ok2 := k.tmpl(v.Right, scope)
			return l + r, ok && ok2
		}
	case *ast.Identifier:
		if b := k.lookup(string(v.Name), scope); b != nil && b.tmpl != "" {
			return b.tmpl, true
		}
	}
	if x, ok := k.expr(e, scope); ok {
		return "{{ " + x + " }}", true
	}
	return "", false
}

// expr gives an expr-lang expression for a numeric or name expression.
func (k *k6conv) expr(e ast.Expression, scope map[string]*k6binding) (string, bool) {
	switch v := e.(type) {
	case *ast.Identifier:
		switch v.Name {
		case "__VU":
			return "(vu + 1)", true
		case "__ITER":
			return "iteration", true
		}
		if b := k.lookup(string(v.Name), scope); b != nil && b.expr != "" {
			return b.expr, true
		}
	case *ast.NumberLiteral:
		return v.Literal, true
	case *ast.DotExpression:
		if id, ok := v.Left.(*ast.Identifier); ok {
			if id.Name == "__ENV" {
				return "env." + string(v.Identifier.Name), true
			}
			if b := k.lookup(string(id.Name), scope); b != nil && b.row != "" {
				return b.row + "." + string(v.Identifier.Name), true
			}
		}
	case *ast.BinaryExpression:
		op := map[token.Token]string{token.PLUS: "+", token.MINUS: "-", token.MULTIPLY: "*", token.SLASH: "/", token.REMAINDER: "%"}[v.Operator]
		if op == "" {
			return "", false
		}
		l, ok := k.expr(v.Left, scope)
		r, ok2 := k.expr(v.Right, scope)
		return "(" + l + " " + op + " " + r + ")", ok && ok2
	}
	return "", false
}

// lit evaluates a constant expression (options).
func (k *k6conv) lit(e ast.Expression) (any, bool) {
	switch v := e.(type) {
	case *ast.StringLiteral:
		return string(v.Value), true
	case *ast.NumberLiteral:
		return toFloat(v.Value)
	case *ast.BooleanLiteral:
		return v.Value, true
	case *ast.ArrayLiteral:
		var a []any
		for _, x := range v.Value {
			val, ok := k.lit(x)
			if !ok {
				return nil, false
			}
			a = append(a, val)
		}
		return a, true
	case *ast.ObjectLiteral:
		m := map[string]any{}
		for _, p := range v.Value {
			pk, ok := p.(*ast.PropertyKeyed)
			if !ok {
				k.not(p, "an option that is not a constant")
				continue
			}
			key, ok := propKey(pk)
			val, ok2 := k.lit(pk.Value)
			if !ok || !ok2 {
				k.not(p, "an option that is not a constant")
				continue
			}
			m[key] = val
		}
		return m, true
	case *ast.Identifier:
		if b := k.global[string(v.Name)]; b != nil && b.node != nil {
			return k.lit(b.node)
		}
	}
	return nil, false
}

// write renders the plan.
func (k *k6conv) write(top []*k6step, scens []*k6scenario, thr []string, once bool) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "# imported by loadlab import k6 from %s\n", filepath.Base(k.file))
	name := strings.TrimSuffix(filepath.Base(k.file), filepath.Ext(k.file))
	fmt.Fprintf(&b, "name: %s\n", q(name))
	if k.origin != "" {
		fmt.Fprintf(&b, "target: %s\n", q(k.origin))
	}
	for _, st := range top {
		if st.comment != "" {
			fmt.Fprintf(&b, "%s\n", st.comment)
		}
	}
	if len(k.order) > 0 {
		b.WriteString("data:\n")
		for _, src := range k.order {
			pick := k.picks[src]
			if pick == "" {
				pick = "sequential"
			}
			if once && pick == "vu" {
				pick = "sequential"
			}
			fmt.Fprintf(&b, "  %s: { csv: %s, pick: %s }\n", src, q(k.data[src]), pick)
		}
	}
	single := len(scens) == 1 && scens[0].name == "default"
	if single {
		b.WriteString("steps:\n")
		writeK6Steps(&b, scens[0].steps, "  ")
		if once {
			b.WriteString("load:\n  closed: { vus: 1, iterations: 1 }\n")
		} else {
			fmt.Fprintf(&b, "load:\n  %s\n", scens[0].load)
		}
	} else {
		b.WriteString("scenarios:\n")
		for _, s := range scens {
			fmt.Fprintf(&b, "  %s:\n", q(s.name))
			if !once {
				fmt.Fprintf(&b, "    load:\n      %s\n", strings.ReplaceAll(s.load, "\n  ", "\n      "))
			}
			b.WriteString("    steps:\n")
			writeK6Steps(&b, s.steps, "      ")
		}
		if once {
			b.WriteString("load:\n  closed: { vus: 1, iterations: 1 }\n")
		}
	}
	real := 0
	for _, t := range thr {
		if !strings.HasPrefix(t, "#") {
			real++
		}
	}
	if len(thr) > 0 {
		if real > 0 { // a thresholds: key with only comments would be null
			b.WriteString("thresholds:\n")
		}
		for _, t := range thr {
			if strings.HasPrefix(t, "#") {
				fmt.Fprintf(&b, "  %s\n", t)
				continue
			}
			expr, comment, _ := strings.Cut(t, "   #")
			fmt.Fprintf(&b, "  - %s", qq(expr))
			if comment != "" {
				fmt.Fprintf(&b, "   #%s", comment)
			}
			b.WriteString("\n")
		}
	}
	return b.Bytes()
}

func writeK6Steps(b *bytes.Buffer, steps []*k6step, ind string) {
	empty := true
	for _, st := range steps {
		switch {
		case st.comment != "":
			fmt.Fprintf(b, "%s%s\n", ind, st.comment)
			continue
		case st.think != "":
			fmt.Fprintf(b, "%s- think: %s\n", ind, st.think)
			empty = false
			continue
		}
		empty = false
		fmt.Fprintf(b, "%s- %s: %s\n", ind, strings.ToLower(st.method), qq(st.url))
		if st.name != "" {
			fmt.Fprintf(b, "%s  name: %s\n", ind, qq(st.name))
		}
		if len(st.headers) > 0 {
			fmt.Fprintf(b, "%s  headers: %s\n", ind, flow(st.headers))
		}
		switch {
		case st.form != nil:
			fmt.Fprintf(b, "%s  form: %s\n", ind, flow(st.form))
		case st.json != nil:
			j, _ := json.Marshal(st.json)
			fmt.Fprintf(b, "%s  json: %s\n", ind, j)
		case st.body != nil:
			fmt.Fprintf(b, "%s  body: %s\n", ind, q(*st.body))
		}
		if st.noFollow {
			fmt.Fprintf(b, "%s  follow_redirects: false\n", ind)
		}
		var ex []string
		if st.status != 0 {
			ex = append(ex, fmt.Sprintf("status: %d", st.status))
		}
		if len(st.contains) == 1 {
			ex = append(ex, "contains: "+qq(st.contains[0]))
		} else if len(st.contains) > 1 {
			cs := make([]string, len(st.contains))
			for i, c := range st.contains {
				cs[i] = qq(c)
			}
			ex = append(ex, "contains: ["+strings.Join(cs, ", ")+"]")
		}
		if len(ex) > 0 {
			fmt.Fprintf(b, "%s  expect: { %s }\n", ind, strings.Join(ex, ", "))
		}
		if len(st.captures) > 0 {
			fmt.Fprintf(b, "%s  capture:\n", ind)
			for _, c := range st.captures {
				fmt.Fprintf(b, "%s    %s: { %s: %s }\n", ind, c.name, c.kind, qq(c.arg))
			}
		}
	}
	if empty {
		fmt.Fprintf(b, "%s- think: 0s   # nothing of this function was converted\n", ind)
	}
}
