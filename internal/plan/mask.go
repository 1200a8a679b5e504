package plan

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"regexp"
	"sort"
	"strings"
)

// Masked is the plan's source with the values of secret variables, and the
// values written into credential headers (Authorization, Cookie, API keys),
// replaced by ***, fit to store beside results and to show in reports.
func (p *Plan) Masked() string {
	lines := strings.Split(string(p.Source), "\n")
	mask := func(pos Pos, text string) {
		if text == "" || pos.Line < 1 || pos.Line > len(lines) {
			return
		}
		line := lines[pos.Line-1]
		from := min(max(pos.Col-1, 0), len(line))
		if i := strings.Index(line[from:], text); i >= 0 {
			lines[pos.Line-1] = line[:from+i] + "***" + line[from+i+len(text):]
		} else {
			// A value written over several lines: mask the rest of the line.
			lines[pos.Line-1] = line[:from] + "***"
		}
	}
	for _, v := range p.Vars {
		if v.Secret {
			mask(v.valuePos, v.valueText)
		}
	}
	for _, t := range p.credentialLiterals() {
		mask(t.Pos, t.Src)
	}
	return strings.Join(lines, "\n")
}

// credentialHeader recognizes headers that carry credentials.
var credentialHeader = regexp.MustCompile(`(?i)^(authorization|proxy-authorization|cookie|x-api-key|api-key|x-auth-token|x-csrf-token|x-xsrf-token)$`)

// credentialHeaders are the plan's header fields that carry credentials.
func (p *Plan) credentialHeaders() []Field {
	var out []Field
	add := func(fs []Field) {
		for _, f := range fs {
			if credentialHeader.MatchString(f.Name) {
				out = append(out, f)
			}
		}
	}
	add(p.HTTP.Headers)
	for _, sc := range p.Scenarios {
		for _, st := range sc.Steps {
			add(st.Headers)
		}
	}
	return out
}

// credentialLiterals are the credential header values written as literals
// in the plan; one made from a template ("Bearer {{ token }}") shows where
// its secret comes from, and the variable's own value is masked.
func (p *Plan) credentialLiterals() []Text {
	var out []Text
	for _, f := range p.credentialHeaders() {
		if !strings.Contains(f.Value.Src, "{{") && f.Value.Src != "" {
			out = append(out, f.Value)
		}
	}
	return out
}

// Secrets lists the values that must never be shown: secret variables and
// secret data columns. Reports use it to mask what they print.
func (p *Plan) Secrets() []string {
	var out []string
	for _, t := range p.credentialLiterals() {
		out = append(out, t.Src)
	}
	for _, v := range p.Vars {
		if v.Secret {
			if s := format(v.Value); s != "" {
				out = append(out, s)
			}
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
	return out
}

// envRef finds the environment variables a plan reads.
var envRef = regexp.MustCompile(`\benv\.([A-Za-z_][A-Za-z0-9_]*)`)

// secretName recognizes environment variables that hold secrets by name.
var secretName = regexp.MustCompile(`(?i)pass|secret|token|key|auth|cookie|credential|bearer|session|private`)

// Inputs is what the plan file alone does not say about a run, for the
// record beside it: each --set override, each -e value, and the value of
// each environment variable the plan reads from the process environment,
// secrets masked. With the plan's text they say exactly what was run.
func (p *Plan) Inputs() []string {
	out := make([]string, 0, len(p.opts.Set)+len(p.opts.Env))
	for _, s := range p.opts.Set {
		if k, _, ok := strings.Cut(s, "="); ok && secretName.MatchString(k) {
			s = k + "=***"
		}
		out = append(out, "--set "+p.MaskSecrets(s))
	}
	inCredentials := map[string]bool{}
	for _, f := range p.credentialHeaders() {
		for _, m := range envRef.FindAllStringSubmatch(f.Value.Src, -1) {
			inCredentials[m[1]] = true
		}
	}
	show := func(name, v string) string {
		if secretName.MatchString(name) || inCredentials[name] {
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

// MaskSecrets replaces every secret value in s with ***.
func (p *Plan) MaskSecrets(s string) string {
	for _, secret := range p.Secrets() {
		s = strings.ReplaceAll(s, secret, "***")
	}
	return s
}
