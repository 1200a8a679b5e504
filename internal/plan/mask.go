package plan

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/loadlab/loadlab/internal/secret"
)

// Masked is the plan's source with the values of secret variables, and the
// values written into credential headers (Authorization, Cookie, API keys),
// replaced by ***, fit to store beside results and to show in reports.
func (p *Plan) Masked() string {
	lines := strings.Split(string(p.Source), "\n")
	mask := func(pos Pos, text string) {
		text = strings.TrimSpace(text)
		if text == "" || pos.Line < 1 || pos.Line > len(lines) {
			return
		}
		line := lines[pos.Line-1]
		from := min(max(pos.Col-1, 0), len(line))
		if i := strings.Index(line[from:], text); i >= 0 {
			at := from + i
			// Unquoted, *** would read as a YAML alias: quote it, so that
			// the stored plan still loads.
			stars := `"` + secret.Mask + `"`
			if at > 0 && (line[at-1] == '"' || line[at-1] == '\'') {
				stars = secret.Mask
			}
			lines[pos.Line-1] = line[:at] + stars + line[at+len(text):]
			return
		}
		// A value written over several lines (a block scalar, a folded
		// string): keep a block scalar's indicator (| or >), or mask the rest
		// of the first line; then mask each of its lines.
		if head := strings.TrimSpace(line[from:]); !strings.HasPrefix(head, "|") && !strings.HasPrefix(head, ">") {
			lines[pos.Line-1] = line[:from] + `"***"`
		}
		rest := strings.Split(text, "\n")
		for n := pos.Line; n < len(lines) && len(rest) > 0; n++ {
			part := strings.TrimSpace(rest[0])
			if part == "" {
				rest = rest[1:]
				n--
				continue
			}
			if i := strings.Index(lines[n], part); i >= 0 {
				lines[n] = lines[n][:i] + "***" + lines[n][i+len(part):]
				rest = rest[1:]
			}
		}
	}
	type written struct {
		pos  Pos
		text string
	}
	var masks []written
	credVars := p.credentialVars()
	for _, v := range p.Vars {
		if v.Secret || credVars[v.Name] {
			masks = append(masks, written{v.valuePos, v.valueText})
		}
	}
	// A secret overridden with --set still has its value in the file.
	for name, n := range p.writtenVars() {
		for _, v := range p.Vars {
			if v.Name == name && (v.Secret || credVars[name]) && n.pos.File == p.File && n.pos != v.valuePos {
				masks = append(masks, written{n.pos, n.value})
			}
		}
	}
	for _, t := range p.credentialLiterals() {
		masks = append(masks, written{t.Pos, t.Src})
	}
	// Last first: a value masked on a line moves what follows it, not what
	// comes before (two secrets on one line of a flow mapping).
	slices.SortStableFunc(masks, func(a, b written) int {
		if a.pos.Line != b.pos.Line {
			return b.pos.Line - a.pos.Line
		}
		return b.pos.Col - a.pos.Col
	})
	for _, m := range masks {
		mask(m.pos, m.text)
	}
	// Credentials in URLs' query strings: ?api_key=..., &token=...
	return secret.URL(strings.Join(lines, "\n"))
}

// writtenVars are the value nodes of the variables as the plan file has
// them, before --set: those the overrides replaced, when there are any.
func (p *Plan) writtenVars() map[string]*node {
	if len(p.opts.Set) == 0 {
		return nil
	}
	root, err := parseYAML(p.File, p.Source)
	if err != nil || root.kind != kindMap {
		return nil
	}
	vars := root.get("vars")
	if vars == nil || vars.kind != kindMap {
		return nil
	}
	out := map[string]*node{}
	for i, k := range vars.keys {
		v := vars.vals[i]
		if v.kind == kindMap {
			v = v.get("value")
		}
		if v != nil && v.kind == kindScalar {
			out[k.value] = v
		}
	}
	return out
}

// credentialHeaders are the plan's header fields that carry credentials,
// the form fields and JSON body keys named as credentials (form: {
// password: ... }, json: { api_key: ... }), the query parameters named as
// credentials (query: { api_key: ... }), and
// the server's environment variables named as credentials (DB_PASSWORD,
// API_KEY): their values are as secret as a header's.
func (p *Plan) credentialHeaders() []Field {
	var out []Field
	add := func(fs []Field) {
		for _, f := range fs {
			if secret.Name(f.Name) {
				out = append(out, f)
			}
		}
	}
	add(p.HTTP.Headers)
	if p.Server != nil {
		add(p.Server.Env)
	}
	for _, sc := range p.Scenarios {
		for _, st := range sc.Steps {
			add(st.Headers)
			add(st.Form)
			if st.Multipart != nil {
				add(st.Multipart.Fields)
			}
			add(jsonCredentials(st.JSON))
			for _, f := range st.Query {
				if secret.QueryName(f.Name) {
					out = append(out, f)
				}
			}
		}
	}
	return out
}

// jsonCredentials are the string values of a JSON body's keys named as
// credentials (secret.Name), at any depth: { "user": { "password": ... } }.
func jsonCredentials(n *node) []Field {
	var out []Field
	var walk func(n *node)
	walk = func(n *node) {
		if n == nil {
			return
		}
		for i, v := range n.vals {
			if n.kind == kindMap && i < len(n.keys) && v.kind == kindScalar && secret.Name(n.keys[i].value) {
				out = append(out, Field{Name: n.keys[i].value, Value: Text{Src: v.value, Pos: v.pos, quoted: v.quoted, written: v.written}, Pos: n.keys[i].pos})
				continue
			}
			walk(v)
		}
	}
	walk(n)
	return out
}

// credentialLiterals are the credential header values written as literals
// in the plan; one made from a template ("Bearer {{ token }}") shows where
// its secret comes from, and the variable's own value is masked.
func (p *Plan) credentialLiterals() []Text {
	var out []Text
	for _, f := range p.credentialHeaders() {
		if w := f.Value.Written(); !strings.Contains(w, "{{") && w != "" {
			out = append(out, f.Value)
		}
	}
	return out
}

// templateName finds the names a template's {{ }} parts use.
var templateName = regexp.MustCompile(`\{\{([^}]*)\}\}`)
var identifier = regexp.MustCompile(`[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*`)

// credentialVars are the plan variables a credential header is made from,
// directly or through other variables: their values are as secret as a
// literal written into the header.
func (p *Plan) credentialVars() map[string]bool {
	vars := map[string]*Var{}
	for i := range p.Vars {
		vars[p.Vars[i].Name] = &p.Vars[i]
	}
	out := map[string]bool{}
	var visit func(src string)
	visit = func(src string) {
		for _, m := range templateName.FindAllStringSubmatch(src, -1) {
			for _, name := range identifier.FindAllString(m[1], -1) {
				if v, ok := vars[name]; ok && !out[name] {
					out[name] = true
					visit(v.valueText)
				}
			}
		}
	}
	for _, f := range p.credentialHeaders() {
		visit(f.Value.Written())
	}
	return out
}

// credentialCaptures are the captures whose values are credentials: those
// named as one (csrf, token, session_id) and those a credential header is
// made from, directly or through plan variables ("Bearer {{ t }}"). Their
// values are known only as VUs run, so they are masked there, in the
// failing responses kept (journey.Runner.SecretSlots).
func (p *Plan) credentialCaptures() map[string]bool {
	out := map[string]bool{}
	captures := map[string]bool{}
	for _, sc := range p.Scenarios {
		for _, st := range sc.Steps {
			for _, cp := range st.Captures {
				captures[cp.Var] = true
				if secret.Name(cp.Var) {
					out[cp.Var] = true
				}
			}
		}
	}
	srcs := []string{}
	for _, f := range p.credentialHeaders() {
		srcs = append(srcs, f.Value.Written())
	}
	credVars := p.credentialVars()
	for _, v := range p.Vars {
		if credVars[v.Name] {
			srcs = append(srcs, v.valueText)
		}
	}
	for _, src := range srcs {
		for _, m := range templateName.FindAllStringSubmatch(src, -1) {
			for _, name := range identifier.FindAllString(m[1], -1) {
				if captures[name] {
					out[name] = true
				}
			}
		}
	}
	return out
}

// LearnsSecrets reports whether VUs capture credentials (credentialCaptures):
// values a run learns (ProgramOptions.Learned) and its server's log masks
// (server.Spec.Learned).
func (p *Plan) LearnsSecrets() bool { return len(p.credentialCaptures()) > 0 }

// credentialEnv are the environment variables a credential header reads,
// directly or through plan variables.
func (p *Plan) credentialEnv() map[string]bool {
	out := map[string]bool{}
	srcs := []string{}
	for _, f := range p.credentialHeaders() {
		srcs = append(srcs, f.Value.Written())
	}
	credVars := p.credentialVars()
	for _, v := range p.Vars {
		if credVars[v.Name] || v.Secret {
			srcs = append(srcs, v.valueText)
			if v.Env != "" {
				out[v.Env] = true
			}
		}
	}
	for _, src := range srcs {
		for _, m := range envRef.FindAllStringSubmatch(src, -1) {
			out[m[1]] = true
		}
	}
	// An environment variable named as a credential is one wherever the
	// plan reads it: {{ env.DB_PASSWORD }} in server.run.
	for _, name := range p.EnvNames() {
		if secret.Name(name) {
			out[name] = true
		}
	}
	return out
}

// Secrets lists the values that must never be shown: secret variables, the
// values credential headers are made of, and secret data columns. Reports
// use it to mask what they print.
func (p *Plan) Secrets() []string {
	var out []string
	add := func(s string) {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	for _, t := range p.credentialLiterals() {
		add(t.Src)
	}
	// Credentials written in the query strings of the plan's URLs.
	for _, v := range secret.QueryValues(string(p.Source)) {
		add(v)
	}
	credVars := p.credentialVars()
	for _, v := range p.Vars {
		if v.Secret || credVars[v.Name] {
			add(format(v.Value))
		}
	}
	for _, name := range sortedKeys(p.credentialEnv()) {
		if v, ok := p.envValue(name); ok {
			add(v)
		}
	}
	for _, f := range p.Data {
		for i, c := range f.Columns {
			if !f.Secret[c] {
				continue
			}
			for _, row := range f.Rows {
				if i < len(row) && row[i] != "" {
					out = append(out, row[i])
				}
			}
		}
	}
	return append(out, p.derivedSecrets()...)
}

// derivedSecrets are the values the plan's templates make from secrets by
// a function or an operator ({{ upper(password) }}, {{ "Bearer " + token
// }}, {{ users.password + "!" }}): as secret as the secrets themselves,
// and unknown to a mask that looks for those. Each such expression that
// reads only plan variables, the environment, params and data columns is
// evaluated here, once per row of a data file it reads; those that read
// what VUs capture are left to the VUs (journey.Runner.SecretSlots), and
// those that fail to evaluate fail at load, as any template does.
func (p *Plan) derivedSecrets() []string {
	if p.derived == nil { // a Plan not made by Parse
		return p.evalDerivedSecrets()
	}
	p.derived.once.Do(func() { p.derived.values = p.evalDerivedSecrets() })
	return p.derived.values
}

// capturedDerived are the expressions of the plan's templates that make a
// value from a captured credential with a function or an operator
// ({{ upper(session_token) }}, {{ "Bearer " + t }}): known only as VUs
// run, so each VU evaluates them when it keeps a failing response and,
// for server.log, when it captures a credential.
// An expression that reads a capture of any kind and a secret variable,
// environment variable or data column ({{ heading + password }}) is one.
func (p *Plan) capturedDerived() []string {
	creds := p.credentialCaptures()
	captures := map[string]bool{}
	for _, sc := range p.Scenarios {
		for _, st := range sc.Steps {
			for _, cp := range st.Captures {
				captures[cp.Var] = true
			}
		}
	}
	if len(captures) == 0 {
		return nil
	}
	secretNames := p.secretNames()
	seen := map[string]bool{}
	var out []string
	for _, src := range append([]string{string(p.Source)}, p.serverFiles()...) {
		for _, m := range templateName.FindAllStringSubmatch(src, -1) {
			e := strings.TrimSpace(m[1])
			if seen[e] || identifier.FindString(e) == e {
				continue
			}
			seen[e] = true
			cred, capture, secret := false, false, false
			for _, name := range identifier.FindAllString(e, -1) {
				cred = cred || creds[name]
				capture = capture || captures[name]
				secret = secret || secretNames[name]
			}
			if cred || capture && secret {
				out = append(out, e)
			}
		}
	}
	return out
}

// derived holds a plan's derivedSecrets, evaluated once: the plan does
// not change once loaded, and evaluating them on every row of a large
// data file takes a while (3 µs a row).
type derived struct {
	once   sync.Once
	values []string
}

// evalDerivedSecrets is derivedSecrets, evaluated.
func (p *Plan) evalDerivedSecrets() []string {
	secretNames := p.secretNames()
	data := map[string]*Feeder{}
	for _, f := range p.Data {
		data[f.Name] = f
	}
	if len(secretNames) == 0 {
		return nil
	}
	return p.evalDerivedFrom(secretNames, data)
}

// secretNames are the names a template reads secrets by: secret
// variables (and those credentials are made from), env.NAME of
// credential environment variables, and secret data columns (users.password).
func (p *Plan) secretNames() map[string]bool {
	secretNames := map[string]bool{}
	credVars := p.credentialVars()
	for _, v := range p.Vars {
		if v.Secret || credVars[v.Name] {
			secretNames[v.Name] = true
		}
	}
	for name := range p.credentialEnv() {
		secretNames["env."+name] = true
	}
	for _, f := range p.Data {
		for c := range f.Secret {
			if f.Secret[c] {
				secretNames[f.Name+"."+c] = true
			}
		}
	}
	return secretNames
}

// evalDerivedFrom is evalDerivedSecrets on the names and data given.
func (p *Plan) evalDerivedFrom(secretNames map[string]bool, data map[string]*Feeder) []string {
	srcs := append([]string{string(p.Source)}, p.serverFiles()...)
	seen := map[string]bool{}
	var out []string
	for _, src := range srcs {
		for _, m := range templateName.FindAllStringSubmatch(src, -1) {
			e := strings.TrimSpace(m[1])
			if seen[e] || identifier.FindString(e) == e { // a bare name is masked as itself
				continue
			}
			seen[e] = true
			reads, files := false, map[string]*Feeder{}
			for _, name := range identifier.FindAllString(e, -1) {
				reads = reads || secretNames[name]
				if head, _, ok := strings.Cut(name, "."); ok && data[head] != nil {
					files[head] = data[head]
				}
			}
			if reads {
				out = append(out, p.evalDerived(e, files)...)
			}
		}
	}
	return out
}

// evalDerived evaluates the expression e on the plan's constants, and on
// each row of the data files it reads (one file at a time: an expression
// that reads two files is evaluated on their rows in step).
func (p *Plan) evalDerived(e string, files map[string]*Feeder) []string {
	sc := p.constScope(p.opts)
	rows := 1
	for _, f := range files {
		for _, c := range f.Columns {
			sc.Slot(f.Name + "." + c)
		}
		rows = max(rows, len(f.Rows))
	}
	tpl, err := sc.Compile("{{" + e + "}}")
	if err != nil {
		return nil
	}
	st := sc.NewState()
	var out []string
	for r := range rows {
		for _, f := range files {
			for i, c := range f.Columns {
				v := ""
				if len(f.Rows) > 0 {
					if row := f.Rows[r%len(f.Rows)]; i < len(row) {
						v = row[i]
					}
				}
				st.Set(sc.Slot(f.Name+"."+c), v)
			}
		}
		if s, err := tpl.String(st); err == nil && s != "" {
			out = append(out, s)
		}
	}
	return out
}

// envRef finds the environment variables a plan reads.
var envRef = regexp.MustCompile(`\benv\.([A-Za-z_][A-Za-z0-9_]*)`)

// Inputs is what the plan file alone does not say about a run, for the
// record beside it: each --set override, each -e value, and the value of
// each environment variable the plan reads from the process environment,
// secrets masked. With the plan's text they say exactly what was run.
func (p *Plan) Inputs() []string {
	out := make([]string, 0, len(p.opts.Set)+len(p.opts.Env))
	credVars, inCredentials := p.credentialVars(), p.credentialEnv()
	secretVar := func(name string) bool {
		for _, v := range p.Vars {
			if v.Name == name && v.Secret {
				return true
			}
		}
		return credVars[name]
	}
	for _, s := range p.opts.Set {
		if k, _, ok := strings.Cut(s, "="); ok && (secret.Name(k) || secretVar(strings.TrimPrefix(k, "vars."))) {
			s = k + "=***"
		}
		out = append(out, "--set "+p.MaskSecrets(s))
	}
	show := func(name, v string) string {
		if secret.Name(name) || inCredentials[name] || secretVar(name) {
			return "***"
		}
		return p.MaskSecrets(v)
	}
	for _, name := range sortedKeys(p.opts.Env) {
		out = append(out, "-e "+name+"="+show(name, p.opts.Env[name]))
	}
	for _, name := range p.EnvNames() {
		if _, ok := p.opts.Env[name]; ok {
			continue
		}
		if v, ok := p.envValue(name); ok {
			out = append(out, "env."+name+"="+show(name, v))
		} else {
			out = append(out, "env."+name+" unset")
		}
	}
	params := make([]string, 0, len(p.opts.Params))
	for name := range p.opts.Params {
		if p.baselineParams {
			break
		}
		params = append(params, name)
	}
	sort.Strings(params)
	for _, name := range params {
		out = append(out, fmt.Sprintf("param %s=%s", name, p.MaskSecrets(format(p.opts.Params[name]))))
	}
	return out
}

// EnvNames lists, sorted, the environment variables the plan reads.
func (p *Plan) EnvNames() []string {
	var names []string
	seen := map[string]bool{}
	for _, m := range envRef.FindAllStringSubmatch(string(p.Source), -1) {
		if !seen[m[1]] {
			seen[m[1]] = true
			names = append(names, m[1])
		}
	}
	for _, f := range p.serverFiles() {
		for _, m := range envRef.FindAllStringSubmatch(f, -1) {
			if !seen[m[1]] {
				seen[m[1]] = true
				names = append(names, m[1])
			}
		}
	}
	for _, v := range p.Vars { // { env: NAME }
		if v.Env != "" && !seen[v.Env] {
			seen[v.Env] = true
			names = append(names, v.Env)
		}
	}
	sort.Strings(names)
	return names
}

// EnvValue is the value the plan sees for env.NAME: -e wins over the
// process environment.
func (p *Plan) envValue(name string) (string, bool) {
	if v, ok := p.opts.Env[name]; ok {
		return v, true
	}
	if p.opts.LookupEnv != nil {
		return p.opts.LookupEnv(name)
	}
	return "", false
}

// serverFiles are the texts of the server's template files.
func (p *Plan) serverFiles() []string {
	if p.Server == nil {
		return nil
	}
	var out []string
	for _, f := range p.Server.Files {
		out = append(out, f.Template.Src)
	}
	return out
}

// Fingerprint identifies what the plan measures: its text, the command-line
// changes to it, the environment it reads, and the files it reads (data and
// server templates). An experiment refuses to resume when it changed.
func (p *Plan) Fingerprint() string {
	h := sha256.New()
	h.Write(p.Source)
	for _, s := range p.opts.Set {
		fmt.Fprintf(h, "\x00set %s", s)
	}
	for _, name := range sortedKeys(p.opts.Env) {
		fmt.Fprintf(h, "\x00-e %s=%s", name, p.opts.Env[name])
	}
	for _, name := range p.EnvNames() {
		v, ok := p.envValue(name)
		fmt.Fprintf(h, "\x00env %s %t %s", name, ok, v)
	}
	for _, f := range p.Data {
		fmt.Fprintf(h, "\x00data %s\x00", f.File)
		if b, err := os.ReadFile(f.File); err == nil {
			h.Write(b)
		}
	}
	for _, f := range p.serverFiles() {
		fmt.Fprintf(h, "\x00file %s", f)
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}

// MaskSecrets replaces every secret value in s with ***, by secret.Replace's
// rule (the plan's own text masks them by position, whatever their length).
func (p *Plan) MaskSecrets(s string) string { return secret.Replace(s, p.Secrets()) }
