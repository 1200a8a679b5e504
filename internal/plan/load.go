package plan

import (
	"bytes"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"net/url"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/loadlab/loadlab/internal/expr"
	"github.com/loadlab/loadlab/internal/httpx"
	"github.com/loadlab/loadlab/internal/secret"
	"github.com/loadlab/loadlab/internal/suggest"
)

// Options change a plan as it loads.
type Options struct {
	// Set overrides plan fields: "load.closed.vus=10". The value is YAML.
	Set []string
	// Env sets environment variables for {{ env.NAME }}; a name that is
	// also a plan variable overrides the variable too. These win over the
	// process environment.
	Env map[string]string
	// LookupEnv reads the process environment; nil means none.
	LookupEnv func(string) (string, bool)
	// Params are the values of an experiment point's params: constants in
	// every template. Nil means the baseline's.
	Params map[string]any
	// Thresholds are clauses of the threshold grammar given on the command
	// line (--threshold), judged after the plan's own, with the same checks.
	Thresholds []string
}

// renderConsts fills {{ }} in the scalars of a section that is read once per
// run (load, http, thresholds) from plan variables, the environment and
// params, before the section is decoded: so a sweep can vary the load
// itself, as in vus: "{{ users }}".
func (d *decoder) renderConsts(p *Plan, opts Options, n *node) {
	if n == nil {
		return
	}
	var sc *expr.Scope
	var walk func(n *node)
	walk = func(n *node) {
		if n.kind == kindScalar && strings.Contains(n.value, "{{") {
			if sc == nil {
				sc = p.constScope(opts)
			}
			t := Text{Src: n.value, Pos: n.pos, quoted: n.quoted}
			tpl, err := sc.Compile(n.value)
			if err != nil {
				d.templateError(t, err)
				return
			}
			s, ok := tpl.Static()
			if !ok {
				d.errorf(n.pos, "only plan variables, env.NAME and params may be used here, not values that change per VU")
				return
			}
			n.written, n.value, n.quoted = n.value, s, false
			return
		}
		for _, c := range n.vals {
			walk(c)
		}
	}
	walk(n)
}

// Load reads and validates a plan file.
func Load(path string, opts Options) (*Plan, error) {
	data, err := readPlan(path)
	if err != nil {
		return nil, Errors{{Pos: Pos{File: path}, Msg: "cannot read the plan: " + errors.Unwrap(err).Error()}}
	}
	return Parse(path, data, opts)
}

var topKeys = []string{"name", "target", "vars", "data", "scenarios", "steps", "load", "thresholds", "http", "server", "params", "vary", "baseline", "repeat", "max_repeat", "min_effect", "warmup", "cooldown", "seed", "knee", "compare", "target_rate", "capacity"}

// Parse validates a plan given as bytes; file names it in errors and
// relative paths are resolved against its directory.
func Parse(file string, data []byte, opts Options) (*Plan, error) {
	// A UTF-8 byte order mark (Windows editors write one) is not a part of
	// the first key: drop it, as CSV files drop theirs.
	data = bytes.TrimPrefix(data, []byte("\ufeff"))
	if len(data) > MaxPlanBytes {
		return nil, Errors{{Pos: Pos{File: file, Line: 1, Col: 1}, Msg: fmt.Sprintf("the plan is over %s, loadlab's limit for a plan file (see Limits in docs/plan.md)", byteCount(MaxPlanBytes))}}
	}
	root, err := parseYAML(file, data)
	if err != nil {
		return nil, err
	}
	d := &decoder{}
	for _, s := range opts.Set {
		d.override(root, s)
	}
	if len(d.errs) > 0 {
		return nil, d.errs
	}
	p := &Plan{File: file, Dir: filepath.Dir(file), Source: data, opts: opts, derived: &derived{}}
	if root.kind == kindNull {
		return nil, Errors{{Pos: Pos{File: file, Line: 1, Col: 1}, Msg: "the plan is empty: expected a mapping with at least scenarios (or steps) and load"}}
	}
	top, ok := d.fields(root, "the plan", topKeys...)
	if !ok {
		return nil, d.errs
	}
	top.pos = Pos{File: file, Line: 1, Col: 1} // errors about the whole file point at its start
	p.Name = strings.TrimSuffix(filepath.Base(file), filepath.Ext(file))
	if n := top.get("name"); n != nil {
		if s, ok := d.str(n, "name"); ok {
			p.Name = s
			// An experiment's results go to results/NAME: a name that is a
			// path would put them elsewhere (".." is the current directory).
			if t := strings.TrimSpace(s); t == "" || t == "." || t == ".." || strings.ContainsAny(s, `/\`) {
				d.errorf(n.pos, "name %q must not be empty, . or .., nor hold / or \\: it names the results directory results/NAME", s)
			}
		}
	}
	d.vars(p, top.get("vars"), opts)
	d.experiment(p, top)
	// Params are constants in every template; validate with the baseline's.
	if opts.Params == nil && p.Experiment != nil {
		opts.Params = p.Experiment.BaselineParams()
		p.opts.Params = opts.Params
		p.baselineParams = true
	}
	d.renderConsts(p, opts, top.get("load"))
	if sn := top.get("scenarios"); sn != nil && sn.kind == kindMap {
		for _, sc := range sn.vals {
			if sc.kind == kindMap {
				d.renderConsts(p, opts, sc.get("load"))
			}
		}
	}
	d.renderConsts(p, opts, top.get("http"))
	d.renderConsts(p, opts, top.get("thresholds"))
	d.target(p, top.get("target"), opts)
	d.data(p, top.get("data"))
	d.httpOptions(p, top.get("http"))
	d.scenarios(p, top)
	if d.perScenario(p, top) {
		for _, sc := range p.Scenarios {
			d.loadInto(sc.Load, sc.loadNode)
			sc.loadNode = nil
		}
	} else {
		d.load(p, root, top.get("load"))
	}
	d.checkRowsPerVU(p)
	d.checkWarmup(p)
	d.thresholds(p, top.get("thresholds"))
	for _, text := range opts.Thresholds {
		t := Threshold{Text: text, Pos: Pos{File: p.File, Source: "--threshold " + strconv.Quote(text)}}
		d.parseThreshold(&t)
		d.checkThresholdFilters(p, &t)
		p.Thresholds = append(p.Thresholds, t)
	}
	if n := top.get("capacity"); n != nil {
		d.capacity(p, n)
	}
	if n := top.get("server"); n != nil {
		d.server(p, n)
	}
	d.checkBoxes(p)
	for _, t := range p.Thresholds {
		if t.T != nil && strings.HasPrefix(string(t.T.Metric), "server.") && p.Server == nil {
			d.errorf(t.Pos, "%s needs a server: section: loadlab watches only a server it starts", t.T.Metric)
		}
	}
	if p.Server != nil && len(d.errs) == 0 {
		_, _, err := p.EachRunSpecs(p.sampleParams())
		if err == nil {
			_, err = p.ServerSpec(p.sampleParams())
		}
		if err != nil {
			var es Errors
			var e *Error
			switch {
			case errors.As(err, &es):
				d.errs = append(d.errs, es...)
			case errors.As(err, &e):
				d.errs = append(d.errs, e)
			}
		}
	}
	// Compile even when decoding found problems, so that one run of loadlab
	// reports template errors along with the rest.
	if err := p.compileCheck(opts); err != nil {
		var es Errors
		if errors.As(err, &es) {
			for _, e := range es {
				if !d.aboutUnreadData(e) {
					d.errs = append(d.errs, e)
				}
			}
		} else {
			d.errorf(Pos{File: file, Line: 1, Col: 1}, "%v", err)
		}
	}
	if len(d.errs) > 0 {
		return nil, d.errs.sorted()
	}
	return p, nil
}

// override applies one --set.
func (d *decoder) override(root *node, set string) {
	src := Pos{Source: "--set " + set}
	key, val, ok := strings.Cut(set, "=")
	if !ok || key == "" {
		d.errorf(src, "want --set key.path=value")
		return
	}
	v, err := parseYAML("--set "+key, []byte(val))
	if err != nil {
		d.errorf(src, "the value is not YAML: %v", err)
		return
	}
	if v.kind == kindNull && val == "" {
		v = &node{kind: kindScalar, quoted: true}
	}
	// A null value removes the field: --set server=null runs the plan
	// against a server that is already up. Removing what the plan does not
	// have is no error (a script may pass it to every plan), unless the
	// first key names no section at all: that is a typo.
	remove := v.kind == kindNull
	if remove {
		if first, _, _ := strings.Cut(key, "."); !slices.Contains(topKeys, first) {
			d.errorf(src, "cannot remove %q: the plan has no such section%s (known sections: %s)", first, didYouMean(first, topKeys), strings.Join(topKeys, ", "))
			return
		}
	}
	var place func(n *node)
	place = func(n *node) { // errors in the value point at the flag
		n.pos = src
		for _, k := range n.keys {
			place(k)
		}
		for _, c := range n.vals {
			place(c)
		}
	}
	place(v)
	if root.kind == kindNull {
		if remove {
			return
		}
		*root = node{kind: kindMap, pos: root.pos}
	}
	cur := root
	parts := strings.Split(key, ".")
	for i, part := range parts {
		last := i == len(parts)-1
		switch cur.kind {
		case kindMap:
			next := cur.get(part)
			if last && remove {
				if at := slices.IndexFunc(cur.keys, func(k *node) bool { return k.value == part }); at >= 0 {
					cur.keys = slices.Delete(cur.keys, at, at+1)
					cur.vals = slices.Delete(cur.vals, at, at+1)
				}
				return
			}
			if next == nil && remove {
				return
			}
			if last {
				if next != nil {
					*next = *v
				} else {
					cur.keys = append(cur.keys, &node{kind: kindScalar, value: part, pos: src})
					cur.vals = append(cur.vals, v)
				}
				return
			}
			if next == nil {
				next = &node{kind: kindMap, pos: src}
				if idx, err := strconv.Atoi(parts[i+1]); err == nil { // thresholds.0=...: a list where there was none
					if idx != 0 {
						d.errorf(src, "%q is not an index of the list at %s (it has 0 items; 0 adds one)", parts[i+1], strings.Join(parts[:i+1], "."))
						return
					}
					next.kind = kindSeq
				}
				cur.keys = append(cur.keys, &node{kind: kindScalar, value: part, pos: src})
				cur.vals = append(cur.vals, next)
			}
			cur = next
		case kindSeq:
			idx, err := strconv.Atoi(part)
			if remove && err == nil && idx >= len(cur.vals) {
				return
			}
			if err != nil || idx < 0 || idx > len(cur.vals) {
				d.errorf(src, "%q is not an index of the list at %s (it has %d items; %d adds one)", part, strings.Join(parts[:i], "."), len(cur.vals), len(cur.vals))
				return
			}
			if last && remove {
				cur.vals = slices.Delete(cur.vals, idx, idx+1)
				return
			}
			if idx == len(cur.vals) { // one past the end: a new item
				cur.vals = append(cur.vals, &node{kind: kindMap, pos: src})
			}
			if last {
				*cur.vals[idx] = *v
				return
			}
			cur = cur.vals[idx]
		default:
			d.errorf(src, "%s is %s, not a mapping", strings.Join(parts[:i], "."), describe(cur))
			return
		}
	}
}

var identPattern = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// reserved names cannot be plan variables, feeders or captures.
var reserved = map[string]bool{"vu": true, "iteration": true, "scenario": true, "env": true}

func (d *decoder) name(n *node, what string) bool {
	if !identPattern.MatchString(n.value) {
		d.errorf(n.pos, "%s %q must be a name of letters, digits and _ that does not start with a digit", what, n.value)
		return false
	}
	if reserved[n.value] {
		d.errorf(n.pos, "%s %q is reserved: vu, iteration, scenario and env are built in", what, n.value)
		return false
	}
	return true
}

func (d *decoder) vars(p *Plan, n *node, opts Options) {
	if n == nil {
		return
	}
	if n.kind != kindMap {
		d.errorf(n.pos, "vars must be a mapping of names to values, got %s", describe(n))
		return
	}
	for i, k := range n.keys {
		if !d.name(k, "variable") {
			continue
		}
		v := Var{Name: k.value, Pos: k.pos}
		val := n.vals[i]
		switch val.kind {
		case kindScalar:
			v.Value = value(val)
			v.valuePos, v.valueText = val.pos, val.value
		case kindMap:
			m, ok := d.fields(val, "variable "+k.value, "value", "env", "secret")
			if !ok {
				continue
			}
			if en := m.get("env"); en != nil {
				if m.get("value") != nil {
					d.errorf(en.pos, "variable %s: value: or env:, not both", k.value)
					continue
				}
				if !d.envVar(&v, en, opts) {
					continue
				}
			} else if vn := m.get("value"); vn == nil {
				d.errorf(val.pos, "variable %s: expected value: (or env: NAME, to read it from the environment)", k.value)
				continue
			} else if _, ok := d.scalar(vn, "value"); ok {
				v.Value = value(vn)
				v.valuePos, v.valueText = vn.pos, vn.value
			}
			if sn := m.get("secret"); sn != nil {
				v.Secret, _ = d.boolean(sn, "secret")
			}
		default:
			d.errorf(val.pos, "variable %s must be a value or {value: ..., secret: true}, got %s", k.value, val.kind)
			continue
		}
		// The one credential rule: a variable named password is as secret
		// as one marked secret: true.
		v.Secret = v.Secret || secret.Name(v.Name)
		if e, ok := opts.Env[v.Name]; ok {
			v.Value = e
		}
		p.Vars = append(p.Vars, v)
	}
}

// envVar reads a variable written { env: NAME }: its value is the
// environment variable NAME (-e NAME=... or the process environment), so a
// secret need never be written in the plan. Unset, it is an error at env:
// naming both, unless -e sets the plan variable itself.
func (d *decoder) envVar(v *Var, n *node, opts Options) bool {
	name, ok := d.str(n, "env")
	if !ok {
		return false
	}
	if !envName.MatchString(name) {
		d.errorf(n.pos, "variable %s: env must name an environment variable (letters, digits and _), got %q", v.Name, name)
		return false
	}
	value, set := opts.Env[name]
	if !set && opts.LookupEnv != nil {
		value, set = opts.LookupEnv(name)
	}
	if _, override := opts.Env[v.Name]; !set && !override {
		// The variable is still defined: its uses are not errors too.
		d.errorf(n.pos, "variable %s: environment variable %s is not set (export %s=... or pass -e %s=...)", v.Name, name, name, name)
	}
	v.Value, v.Env = value, name
	return true
}

var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

func (d *decoder) target(p *Plan, n *node, opts Options) {
	if n == nil {
		return
	}
	p.targetGiven = true // a target that fails is reported here, not at every step
	s, ok := d.str(n, "target")
	if !ok {
		return
	}
	if strings.Contains(s, "{{") {
		// A target may use plan variables and the environment, nothing per VU.
		sc := p.constScope(opts)
		t, err := sc.Compile(s)
		if err != nil {
			d.templateError(Text{Src: s, Pos: n.pos, quoted: n.quoted}, err)
			return
		}
		if s, ok = t.Static(); !ok {
			d.errorf(n.pos, "target may use plan variables and env.NAME, not values that change per VU")
			return
		}
	}
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		hint := ""
		if !strings.Contains(s, "://") {
			hint = fmt.Sprintf(" (http://%s?)", s)
		}
		d.errorf(n.pos, "target must be an http:// or https:// URL with a host, got %q%s", s, hint)
		return
	}
	if u.RawQuery != "" || u.Fragment != "" {
		d.errorf(n.pos, "target must not have a query or fragment, got %q", s)
		return
	}
	if msg := badPort(u); msg != "" {
		d.errorf(n.pos, "target %q: %s", s, msg)
		return
	}
	if u.User != nil {
		d.errorf(n.pos, `target must not carry credentials (user:password@): set an Authorization header under http.headers, which loadlab masks in every result, e.g. Authorization: "Basic {{ env.AUTH }}"`)
		return
	}
	p.Target = u
}

func (d *decoder) data(p *Plan, n *node) {
	if n == nil {
		return
	}
	if n.kind != kindMap {
		d.errorf(n.pos, "data must be a mapping of names to {csv: file, pick: ...}, got %s", describe(n))
		return
	}
	for i, k := range n.keys {
		if !d.name(k, "data source") {
			continue
		}
		m, ok := d.fields(n.vals[i], "data source "+k.value, "csv", "pick", "secret")
		if !ok {
			d.unreadData(k.value)
			continue
		}
		f := &Feeder{Name: k.value, Pick: PickSequential, Pos: k.pos, Secret: map[string]bool{}}
		if pn := m.get("pick"); pn != nil {
			if s, ok := d.scalar(pn, "pick"); ok {
				f.PickPos = pn.pos
				switch Pick(s) {
				case PickUnique, PickSequential, PickRandom, PickVU:
					f.Pick = Pick(s)
				default:
					d.errorf(pn.pos, "pick must be unique, sequential, random or vu, got %q%s", s, didYouMean(s, []string{"unique", "sequential", "random", "vu"}))
				}
			}
		}
		cn := m.get("csv")
		if cn == nil {
			d.errorf(m.pos, "data source %s: expected csv: FILE", k.value)
			d.unreadData(k.value)
			continue
		}
		file, ok := d.str(cn, "csv")
		if !ok {
			d.unreadData(k.value)
			continue
		}
		f.File = file
		if !filepath.IsAbs(file) {
			f.File = filepath.Join(p.Dir, file)
		}
		if err := f.read(); err != nil {
			d.errorf(cn.pos, "data source %s: %v", k.value, err)
			d.unreadData(k.value)
			continue
		}
		if sn := m.get("secret"); sn != nil {
			cols := sn.vals
			if sn.kind == kindScalar {
				cols = []*node{sn}
			} else if sn.kind != kindSeq {
				d.errorf(sn.pos, "secret must be a column name or a list of them")
			}
			for _, c := range cols {
				if !contains(f.Columns, c.value) {
					d.errorf(c.pos, "secret column %q is not in %s (columns: %s)", c.value, file, strings.Join(f.Columns, ", "))
					continue
				}
				f.Secret[c.value] = true
			}
		}
		p.Data = append(p.Data, f)
	}
}

// unreadData notes a data source that is already an error.
func (d *decoder) unreadData(name string) {
	if d.unread == nil {
		d.unread = map[string]bool{}
	}
	d.unread[name] = true
}

// aboutUnreadData reports whether a template error is only that a data
// source the plan could not read is undefined ("undefined variable
// "users.email"" after "cannot open users.csv"): a follow-on error.
func (d *decoder) aboutUnreadData(e *Error) bool {
	for name := range d.unread {
		if strings.Contains(e.Msg, `undefined variable "`+name+`.`) || strings.Contains(e.Msg, `undefined variable "`+name+`"`) {
			return true
		}
	}
	return false
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// read loads the CSV file: a header row of column names, then rows.
func (f *Feeder) read() error {
	fh, err := openFile(f.File, MaxDataBytes)
	if err != nil {
		return err
	}
	defer fh.Close()
	r := csv.NewReader(&lineLimit{r: fh, file: f.File, max: MaxDataRowBytes})
	r.ReuseRecord = false
	header, err := r.Read()
	if err == io.EOF {
		return fmt.Errorf("%s is empty: expected a header row of column names", f.File)
	}
	if err != nil {
		return fmt.Errorf("%s: %v", f.File, err)
	}
	if len(header) > MaxDataColumns {
		return fmt.Errorf("%s has %s columns; the most is %s (loadlab's limit for a data source; see Limits in docs/plan.md)", f.File, group(int64(len(header))), group(MaxDataColumns))
	}
	if w := r.InputOffset(); w > MaxDataRowBytes {
		return fmt.Errorf("%s: its header row is %s; the widest row is %s (loadlab's limit for a data source; see Limits in docs/plan.md)", f.File, byteCount(int(w)), byteCount(MaxDataRowBytes))
	}
	seen := map[string]bool{}
	for i, c := range header {
		c = strings.TrimSpace(strings.TrimPrefix(c, "\ufeff"))
		if !identPattern.MatchString(c) {
			return fmt.Errorf("%s: column %d of the header, %q, is not a name (expected a header row of column names such as email,password)", f.File, i+1, c)
		}
		if seen[c] {
			return fmt.Errorf("%s: column %q appears twice in the header", f.File, c)
		}
		seen[c] = true
		f.Columns = append(f.Columns, c)
	}
	last := r.InputOffset()
	for {
		rec, err := r.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			return fmt.Errorf("%s: %v", f.File, err)
		}
		if w := r.InputOffset() - last; w > MaxDataRowBytes {
			line, _ := r.FieldPos(0)
			return fmt.Errorf("%s:%d: a row of %s; the widest row is %s (loadlab's limit for a data source; see Limits in docs/plan.md)", f.File, line, byteCount(int(w)), byteCount(MaxDataRowBytes))
		}
		last = r.InputOffset()
		if len(f.Rows) == dataRowLimit {
			return fmt.Errorf("%s has over %s rows, loadlab's limit for a data source (see Limits in docs/plan.md)", f.File, group(int64(dataRowLimit)))
		}
		f.Rows = append(f.Rows, rec)
	}
	if len(f.Rows) == 0 {
		return fmt.Errorf("%s has a header but no rows", f.File)
	}
	return nil
}

// lineLimit fails a read once a line is longer than max, so that a CSV
// row of 200 MB is refused after its first MiB, not after the CSV reader
// holds it all.
type lineLimit struct {
	r    io.Reader
	file string
	max  int
	line int // bytes since the last newline
	n    int // lines read
}

func (l *lineLimit) Read(b []byte) (int, error) {
	n, err := l.r.Read(b)
	for i := 0; i < n; {
		j := bytes.IndexByte(b[i:n], '\n')
		if j < 0 {
			l.line += n - i
			break
		}
		l.line += j
		if l.line > l.max {
			break
		}
		l.line, l.n, i = 0, l.n+1, i+j+1
	}
	if l.line > l.max {
		return 0, fmt.Errorf("line %d is over %s, the widest row loadlab takes (see Limits in docs/plan.md)", l.n+1, byteCount(l.max))
	}
	return n, err
}

// badPort says what is wrong with a URL's port, if anything: url.Parse
// takes port 99999, which only fails when the run dials it.
func badPort(u *url.URL) string {
	port := u.Port()
	if port == "" {
		return ""
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		return fmt.Sprintf("port %s is not a port: expected 1 to 65535", port)
	}
	return ""
}

func (d *decoder) httpOptions(p *Plan, n *node) {
	h := HTTP{Timeout: httpx.DefaultTimeout, FollowRedirects: true, MaxRedirects: 10, KeepAlive: true, MaxBody: httpx.DefaultMaxBodyBytes, MaxHeader: httpx.DefaultMaxHeaderBytes,
		AcceptEncoding: httpx.AcceptEncoding, MaxRequestHeader: DefaultMaxRequestHeader, MaxURL: DefaultMaxURL, MaxRequestBody: DefaultMaxRequestBody}
	defer func() { p.HTTP = h }()
	m, ok := d.fields(n, "http", "timeout", "follow_redirects", "max_redirects", "keepalive", "insecure", "max_body", "max_header", "headers", "compression", "tls", "version",
		"max_request_header", "max_url", "max_request_body")
	if !ok {
		return
	}
	for _, l := range []struct {
		key      string
		to       *int
		min, max int64
	}{
		{"max_request_header", &h.MaxRequestHeader, 256, MaxRequestHeaderLimit},
		{"max_url", &h.MaxURL, 256, MaxURLLimit},
		{"max_request_body", &h.MaxRequestBody, 1, MaxRequestBodyLimit},
	} {
		if v := m.get(l.key); v != nil {
			if x, ok := d.size(v, "http."+l.key); ok {
				if x >= l.min && x <= l.max {
					*l.to = int(x)
				} else {
					d.errorf(v.pos, "http.%s must be from %s to %s, got %s", l.key, byteCount(int(l.min)), byteCount(int(l.max)), v.value)
				}
			}
		}
	}
	if v := m.get("tls"); v != nil {
		h.TLS = d.tlsOptions(p, v)
	}
	if v := m.get("version"); v != nil {
		h.Version = d.httpVersion(v, m.get("keepalive"))
	}
	if v := m.get("compression"); v != nil {
		h.AcceptEncoding = d.compression(v)
	}
	if v := m.get("timeout"); v != nil {
		if t, ok := d.duration(v, "http.timeout"); ok {
			h.Timeout = t
		}
	}
	if v := m.get("follow_redirects"); v != nil {
		h.FollowRedirects, _ = d.boolean(v, "http.follow_redirects")
	}
	if v := m.get("max_redirects"); v != nil {
		if x, ok := d.integer(v, "http.max_redirects", 0); ok {
			h.MaxRedirects = int(x)
		}
	}
	if v := m.get("keepalive"); v != nil {
		h.KeepAlive, _ = d.boolean(v, "http.keepalive")
	}
	if v := m.get("insecure"); v != nil {
		h.Insecure, _ = d.boolean(v, "http.insecure")
	}
	if v := m.get("max_body"); v != nil {
		if x, ok := d.size(v, "http.max_body"); ok {
			if x > 0 {
				h.MaxBody = x
			} else {
				d.errorf(v.pos, "http.max_body must be at least 1 byte, got %s", v.value)
			}
		}
	}
	if v := m.get("max_header"); v != nil {
		if x, ok := d.size(v, "http.max_header"); ok {
			if x >= 256 && x <= 1<<30 {
				h.MaxHeader = x
			} else {
				d.errorf(v.pos, "http.max_header must be from 256B to 1GiB, got %s", v.value)
			}
		}
	}
	h.Headers = d.fieldsOf(m.get("headers"), "http.headers")
	d.checkHeaders(h.Headers)
}

// httpVersion reads http.version: 1.1 (the default, 0) or 2 (h2 by ALPN
// for https, h2c with prior knowledge for http). keepalive is http.keepalive's
// node, if given: an HTTP/2 connection is always kept.
func (d *decoder) httpVersion(n, keepalive *node) int {
	if n.kind != kindScalar {
		d.errorf(n.pos, "http.version must be 1.1 or 2, got %s", n.kind)
		return 0
	}
	switch strings.ToLower(n.value) {
	case "1", "1.1", "http/1.1":
		return 0
	case "2", "2.0", "h2", "http/2":
		if keepalive != nil && keepalive.kind == kindScalar && strings.EqualFold(keepalive.value, "false") {
			d.errorf(keepalive.pos, "http.keepalive: false does not go with http.version: 2 (an HTTP/2 connection carries every request of a VU)")
		}
		return 2
	}
	d.errorf(n.pos, "http.version must be 1.1 or 2, got %q", n.value)
	return 0
}

// compression reads http.compression: true (a browser's Accept-Encoding),
// false (none), or a list of codings, sent in its order.
func (d *decoder) compression(n *node) string {
	if n.kind == kindSeq {
		var names []string
		for _, v := range n.vals {
			name, ok := d.str(v, "http.compression")
			if !ok {
				continue
			}
			if !slices.Contains(httpx.Codings, strings.ToLower(name)) {
				msg := fmt.Sprintf("http.compression: unknown coding %q: loadlab decodes %s", name, strings.Join(httpx.Codings, ", "))
				if s := suggest.Closest(strings.ToLower(name), httpx.Codings); s != "" {
					msg += fmt.Sprintf("; did you mean %q?", s)
				}
				d.errorf(v.pos, "%s", msg)
				continue
			}
			names = append(names, strings.ToLower(name))
		}
		if len(names) == 0 && len(n.vals) == 0 {
			d.errorf(n.pos, "http.compression: an empty list; write false to send no Accept-Encoding")
		}
		return strings.Join(names, ", ")
	}
	if n.kind != kindScalar {
		d.errorf(n.pos, "http.compression must be true, false or a list of codings (%s), got %s", strings.Join(httpx.Codings, ", "), n.kind)
		return ""
	}
	switch strings.ToLower(n.value) {
	case "true", "yes", "on":
		return httpx.AcceptEncoding
	case "false", "no", "off":
		return ""
	}
	d.errorf(n.pos, "http.compression must be true, false or a list of codings (%s), got %q", strings.Join(httpx.Codings, ", "), n.value)
	return ""
}

// checkHeaders reports header names and values that cannot be sent, by the
// request writer's rules (httpx.CheckHeader).
func (d *decoder) checkHeaders(fs []Field) {
	for _, h := range fs {
		if err := httpx.CheckHeader(h.Name, "x"); err != nil {
			d.errorf(h.Pos, "%v", err)
		}
		if err := httpx.CheckHeaderValue(h.Value.Src); err != nil {
			d.errorf(h.Value.Pos, "header %s: %v", h.Name, err)
		}
	}
}

func (d *decoder) scenarios(p *Plan, top *node) {
	sn, steps := top.get("scenarios"), top.get("steps")
	switch {
	case sn != nil && steps != nil:
		d.errorf(steps.pos, "give scenarios or steps (one journey), not both")
		return
	case steps != nil:
		// A nil scenario (an empty, null or mapping steps:, already an
		// error) is left out: the compiler must not meet it.
		if sc := d.scenario("default", steps.pos, &node{kind: kindMap, pos: steps.pos, keys: []*node{{kind: kindScalar, value: "steps"}}, vals: []*node{steps}}); sc != nil {
			p.Scenarios = append(p.Scenarios, sc)
		}
		return
	case sn == nil:
		if !d.misspelt["steps"] && !d.misspelt["scenarios"] {
			d.errorf(top.pos, "the plan has no scenarios: expected scenarios: (or steps: for a single journey)")
		}
		return
	}
	if sn.kind != kindMap || len(sn.keys) == 0 {
		d.errorf(sn.pos, "scenarios must be a mapping of scenario names to {weight, steps}, got %s", describe(sn))
		return
	}
	if !d.atMost(sn, "the number of scenarios", int64(len(sn.keys)), MaxScenarios) {
		return
	}
	for i, k := range sn.keys {
		if !identPattern.MatchString(strings.ReplaceAll(k.value, "-", "_")) {
			d.errorf(k.pos, "scenario name %q must be letters, digits, - and _", k.value)
			continue
		}
		if sc := d.scenario(k.value, k.pos, sn.vals[i]); sc != nil {
			p.Scenarios = append(p.Scenarios, sc)
		}
	}
}

func (d *decoder) scenario(name string, pos Pos, n *node) *Scenario {
	m, ok := d.fields(n, "scenario "+name, "weight", "load", "steps")
	if !ok {
		return nil
	}
	sc := &Scenario{Name: name, Weight: 1, Pos: pos}
	if w := m.get("weight"); w != nil {
		sc.weightPos = w.pos
		if v, ok := d.integer(w, "weight", 1); ok {
			sc.Weight = int(v)
		}
	}
	if l := m.get("load"); l != nil {
		sc.Load, sc.loadNode = &Workload{Pos: l.pos}, l
	}
	steps := m.get("steps")
	if steps == nil || steps.kind == kindNull || (steps.kind == kindSeq && len(steps.vals) == 0) {
		where := pos
		if steps != nil {
			where = steps.pos
		}
		d.errorf(where, "scenario %s has no steps: expected a list of requests such as - get: /", name)
		return nil
	}
	if steps.kind != kindSeq {
		d.errorf(steps.pos, "steps must be a list, got %s", describe(steps))
		return nil
	}
	if !d.atMost(steps, "the number of steps of scenario "+name, int64(len(steps.vals)), MaxSteps) {
		return nil
	}
	requests := 0
	items := 0
	for _, s := range steps.vals {
		if s.kind == kindMap && s.get("parallel") != nil {
			group := d.parallel(s)
			sc.Steps = append(sc.Steps, group...)
			requests += len(group)
			if len(group) > 0 {
				items++
			}
			continue
		}
		if st := d.step(s); st != nil {
			sc.Steps = append(sc.Steps, st)
			items++
			if !st.IsThink {
				requests++
			}
		}
	}
	if requests == 0 && items == len(steps.vals) {
		d.errorf(steps.pos, "scenario %s has no requests, only pauses", name)
	}
	return sc
}

var methods = []string{"get", "post", "put", "patch", "delete", "head", "options"}

var stepKeys = append(append([]string{}, methods...), "think", "name", "headers", "query", "json", "form", "multipart", "body", "body_file", "expect", "capture", "follow_redirects", "ws", "do", "max_message", "parallel")

func (d *decoder) step(n *node) *Step {
	m, ok := d.fields(n, "a step", stepKeys...)
	if !ok {
		return nil
	}
	if m.get("ws") != nil && !slices.ContainsFunc(m.keys, func(k *node) bool { return contains(methods, k.value) || k.value == "think" }) {
		return d.wsStep(n, m)
	}
	for _, k := range m.keys {
		if k.value == "do" || k.value == "max_message" {
			d.errorf(k.pos, "%s: goes with a ws: step", k.value)
		}
	}
	st := &Step{Pos: n.pos}
	var which []string
	for _, k := range m.keys {
		if contains(methods, k.value) || k.value == "think" || k.value == "ws" {
			which = append(which, k.value)
		}
	}
	switch len(which) {
	case 0:
		d.errorf(n.pos, "a step needs a request (get:, post:, put:, patch:, delete:, head: or options:), ws: or think:")
		return nil
	case 1:
	default:
		d.errorf(n.pos, "a step does one thing, but this one has %s", strings.Join(which, " and "))
		return nil
	}
	if which[0] == "think" {
		for _, k := range m.keys {
			if k.value != "think" && k.value != "name" {
				d.errorf(k.pos, "a think step takes no %s", k.value)
			}
		}
		st.IsThink = true
		d.think(st, m.get("think"))
		return st
	}
	st.Method = strings.ToUpper(which[0])
	u, ok := d.text(m.get(which[0]), which[0])
	if !ok {
		return nil
	}
	st.URL = u
	st.Name = st.Method + " " + secret.URL(u.Src) // a step's name is shown: no api_key=... in it
	if v := m.get("name"); v != nil {
		if s, ok := d.str(v, "name"); ok {
			st.Name = s
		}
	}
	st.Headers = d.fieldsOf(m.get("headers"), "headers")
	d.checkHeaders(st.Headers)
	st.Query = d.fieldsOf(m.get("query"), "query")
	bodies := 0
	if v := m.get("json"); v != nil {
		st.JSON = v
		bodies++
	}
	if v := m.get("form"); v != nil {
		st.Form = d.fieldsOf(v, "form")
		bodies++
	}
	if v := m.get("multipart"); v != nil {
		st.Multipart = d.multipart(v)
		bodies++
	}
	if v := m.get("body"); v != nil {
		if t, ok := d.text(v, "body"); ok {
			st.Body = &t
		}
		bodies++
	}
	if v := m.get("body_file"); v != nil {
		if s, ok := d.str(v, "body_file"); ok {
			st.BodyFile = &Text{Src: s, Pos: v.pos}
		}
		bodies++
	}
	if bodies > 1 {
		d.errorf(n.pos, "a step has one body: give json:, form:, multipart:, body: or body_file:, not several")
	}
	if v := m.get("follow_redirects"); v != nil {
		if b, ok := d.boolean(v, "follow_redirects"); ok {
			st.Redirects = &b
		}
	}
	if v := m.get("expect"); v != nil {
		st.Expect = d.expect(v)
	}
	if v := m.get("capture"); v != nil {
		st.Captures = d.captures(v)
	}
	return st
}

// multipart decodes a multipart: body: fields: (a mapping, or a list of
// one-entry mappings when a name repeats) and files: (a list of { name,
// filename, content_type, content or file }).
func (d *decoder) multipart(n *node) *Multipart {
	m, ok := d.fields(n, "multipart", "fields", "files")
	if !ok {
		return nil
	}
	mp := &Multipart{Pos: n.pos}
	if v := m.get("fields"); v != nil {
		if v.kind == kindSeq {
			for _, it := range v.vals {
				if it.kind != kindMap || len(it.keys) != 1 {
					d.errorf(it.pos, "multipart.fields: each item of the list is one name: value, got %s", describe(it))
					continue
				}
				mp.Fields = append(mp.Fields, d.fieldsOf(it, "multipart.fields")...)
			}
		} else {
			mp.Fields = d.fieldsOf(v, "multipart.fields")
		}
	}
	if v := m.get("files"); v != nil {
		if v.kind != kindSeq {
			d.errorf(v.pos, "multipart.files must be a list of { name: FIELD, filename: NAME, content_type: TYPE, content: TEXT } (or file: PATH), got %s", describe(v))
			return mp
		}
		for _, it := range v.vals {
			fm, ok := d.fields(it, "a multipart file", "name", "filename", "content_type", "content", "file")
			if !ok {
				continue
			}
			f := FilePart{Pos: it.pos, ContentType: "application/octet-stream"}
			if nv := fm.get("name"); nv != nil {
				f.Name, _ = d.str(nv, "name")
			}
			if f.Name == "" {
				d.errorf(it.pos, "a multipart file needs name: (its form field's name)")
			}
			if nv := fm.get("filename"); nv != nil {
				f.Filename, _ = d.scalar(nv, "filename") // "": a file input left empty
			}
			if nv := fm.get("content_type"); nv != nil {
				if ct, ok := d.str(nv, "content_type"); ok {
					if strings.ContainsAny(ct, "\r\n") || ct == "" {
						d.errorf(nv.pos, "content_type %q: expected a media type such as text/plain", ct)
					}
					f.ContentType = ct
				}
			}
			if nv := fm.get("content"); nv != nil {
				if t, ok := d.text(nv, "content"); ok {
					f.Content = &t
				}
			}
			if nv := fm.get("file"); nv != nil {
				if p, ok := d.str(nv, "file"); ok {
					f.File = &Text{Src: p, Pos: nv.pos}
				}
				if f.Content != nil {
					d.errorf(nv.pos, "a multipart file has content: or file:, not both")
				}
			}
			for _, bad := range []struct{ what, s string }{{"name", f.Name}, {"filename", f.Filename}} {
				if strings.ContainsAny(bad.s, "\r\n") {
					d.errorf(it.pos, "a multipart file's %s has a line break", bad.what)
				}
			}
			mp.Files = append(mp.Files, f)
		}
	}
	if len(mp.Fields) == 0 && len(mp.Files) == 0 {
		d.errorf(n.pos, "multipart: has no parts: give fields: { NAME: VALUE } or files: [ { name: FIELD, filename: NAME, content: TEXT } ]")
	}
	return mp
}

func (d *decoder) think(st *Step, n *node) {
	s, ok := d.scalar(n, "think")
	if !ok {
		return
	}
	lo, hi, isRange := strings.Cut(s, "..")
	a, err := time.ParseDuration(strings.TrimSpace(lo))
	if err != nil || a < 0 {
		d.errorf(n.pos, "think must be a duration such as 2s, or a range such as 1s..3s, got %q", s)
		return
	}
	b := a
	if isRange {
		b, err = time.ParseDuration(strings.TrimSpace(hi))
		if err != nil || b < a {
			d.errorf(n.pos, "think range %q: expected MIN..MAX durations with MIN no more than MAX, such as 1s..3s", s)
			return
		}
	}
	st.Think, st.ThinkMax = a, b
}

func (d *decoder) expect(n *node) *Expect {
	m, ok := d.fields(n, "expect", "status", "headers", "contains", "json")
	if !ok {
		return nil
	}
	e := &Expect{Pos: n.pos}
	if v := m.get("status"); v != nil {
		items := []*node{v}
		if v.kind == kindSeq {
			items = v.vals
		}
		for _, it := range items {
			s, ok := d.scalar(it, "status")
			if !ok {
				continue
			}
			if len(s) == 3 && (s[1:] == "xx" || s[1:] == "XX") && s[0] >= '1' && s[0] <= '5' {
				e.Status = append(e.Status, StatusMatch{Code: int(s[0]-'0') * 100, Class: true})
				continue
			}
			c, err := strconv.Atoi(s)
			if err != nil || c < 100 || c > 599 {
				d.errorf(it.pos, "status must be a code from 100 to 599 or a class such as 2xx, got %q", s)
				continue
			}
			e.Status = append(e.Status, StatusMatch{Code: c})
		}
	}
	e.Headers = d.fieldsOf(m.get("headers"), "expect.headers")
	if v := m.get("contains"); v != nil {
		items := []*node{v}
		if v.kind == kindSeq {
			items = v.vals
		}
		for _, it := range items {
			if t, ok := d.text(it, "contains"); ok {
				e.Contains = append(e.Contains, t)
			}
		}
	}
	e.JSON = d.fieldsOf(m.get("json"), "expect.json")
	return e
}

var captureKinds = []string{"json", "header", "cookie", "regex", "css"}

func (d *decoder) captures(n *node) []CaptureSpec {
	if n.kind != kindMap {
		d.errorf(n.pos, "capture must be a mapping of variable names to {json: PATH} (or header:, cookie:, regex:, css:), got %s", describe(n))
		return nil
	}
	var out []CaptureSpec
	for i, k := range n.keys {
		if !d.name(k, "capture") {
			continue
		}
		m, ok := d.fields(n.vals[i], "capture "+k.value, append(captureKinds, "attr")...)
		if !ok {
			continue
		}
		c := CaptureSpec{Var: k.value, Pos: k.pos}
		for j, kk := range m.keys {
			if contains(captureKinds, kk.value) {
				if c.Kind != "" {
					d.errorf(kk.pos, "capture %s reads one thing, but has %s and %s", k.value, c.Kind, kk.value)
					continue
				}
				c.Kind = kk.value
				c.Arg, _ = d.str(m.vals[j], kk.value)
				c.ArgP = m.vals[j].pos
				if m.vals[j].quoted {
					c.ArgP = c.ArgP.Shift(1)
				}
			}
		}
		if c.Kind == "" {
			d.errorf(m.pos, "capture %s: expected one of json:, header:, cookie:, regex: or css:", k.value)
			continue
		}
		if a := m.get("attr"); a != nil {
			if c.Kind != "css" {
				d.errorf(a.pos, "attr goes with css:, not %s:", c.Kind)
			}
			c.Attr, _ = d.str(a, "attr")
		}
		out = append(out, c)
	}
	return out
}

func (d *decoder) thresholds(p *Plan, n *node) {
	if n == nil {
		return
	}
	items := []*node{n}
	if n.kind == kindSeq {
		items = n.vals
	}
	for _, it := range items {
		s, ok := d.str(it, "threshold")
		if !ok {
			continue
		}
		t := Threshold{Text: s, Pos: it.pos}
		if it.quoted {
			t.Pos = t.Pos.Shift(1)
		}
		d.parseThreshold(&t)
		d.checkThresholdFilters(p, &t)
		p.Thresholds = append(p.Thresholds, t)
	}
}

// checkThresholdFilters refuses a threshold about a step or scenario the
// plan does not have: a typo would otherwise be found after the load.
func (d *decoder) checkThresholdFilters(p *Plan, t *Threshold) {
	if t.T == nil {
		return // did not parse: already reported
	}
	f := t.T.Filters
	if f.Scenario == "" && f.Step == "" {
		return
	}
	var scenarios, steps []string
	stepSeen := map[string]bool{}
	for _, sc := range p.Scenarios {
		scenarios = append(scenarios, sc.Name)
		if f.Scenario != "" && sc.Name != f.Scenario {
			continue
		}
		for _, st := range sc.Steps {
			if !st.IsThink && !stepSeen[st.Name] {
				stepSeen[st.Name] = true
				steps = append(steps, st.Name)
			}
			steps = append(steps, wsStepNames(st, stepSeen)...)
		}
	}
	unknown := func(what, name string, names []string) {
		msg := fmt.Sprintf("threshold %q: the plan has no %s %q", t.Text, what, name)
		if s := suggest.Closest(name, names); s != "" {
			msg += fmt.Sprintf("; did you mean %q?", s)
		} else if len(names) > 0 {
			msg += fmt.Sprintf(" (%ss: %s)", what, strings.Join(names, ", "))
		}
		d.errorf(t.Pos, "%s", msg)
	}
	if f.Scenario != "" && !slices.Contains(scenarios, f.Scenario) {
		unknown("scenario", f.Scenario, scenarios)
		return
	}
	if f.Step != "" && !stepSeen[f.Step] {
		unknown("step", f.Step, steps)
	}
}
