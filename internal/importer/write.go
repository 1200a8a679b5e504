package importer

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/url"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// q quotes a string for YAML: JSON's double-quoted strings are YAML's.
func q(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// write renders the plan.
func (im *importer) write(file string) []byte {
	var b bytes.Buffer
	name := strings.TrimSuffix(filepath.Base(file), filepath.Ext(file))
	fmt.Fprintf(&b, "# imported by loadlab import har from %s\n", filepath.Base(file))
	fmt.Fprintf(&b, "name: %s\n", q(name))
	fmt.Fprintf(&b, "target: %s\n", q(im.target))
	if len(im.secrets) > 0 {
		names := make([]string, 0, len(im.secrets))
		for n := range im.secrets {
			names = append(names, n)
		}
		sort.Strings(names)
		b.WriteString("vars:\n")
		for _, n := range names {
			fmt.Fprintf(&b, "  %s: { env: %s, secret: true }   # not written: export %s=... (or -e %s=...)\n", n, im.secrets[n], im.secrets[n], im.secrets[n])
		}
	}
	b.WriteString("steps:\n")
	page := ""
	for k, st := range im.steps {
		if !st.asset {
			page = st.name
		} else if k > 0 && !im.steps[k-1].asset {
			fmt.Fprintf(&b, "  # assets of %s, one after another: a browser fetches them in parallel, a plan has no parallel step\n", page)
		}
		if st.think > 0 {
			fmt.Fprintf(&b, "  - think: %s\n", st.think.Round(10*time.Millisecond))
		}
		fmt.Fprintf(&b, "  - %s: %s\n", strings.ToLower(st.method), q(st.url+rawQuery(st.query)))
		fmt.Fprintf(&b, "    name: %s\n", q(st.name))
		if len(st.query) > 0 && !dupKeys(st.query) {
			fmt.Fprintf(&b, "    query: %s\n", flow(st.query))
		}
		if len(st.headers) > 0 {
			fmt.Fprintf(&b, "    headers: %s\n", flow(st.headers))
		}
		switch {
		case st.form != nil && !dupKeys(st.form):
			fmt.Fprintf(&b, "    form: %s\n", flow(st.form))
		case st.form != nil:
			parts := make([]string, len(st.form))
			for k, f := range st.form {
				parts[k] = formEscape(f.k) + "=" + formEscape(f.v)
			}
			fmt.Fprintf(&b, "    body: %s\n    headers: { \"Content-Type\": \"application/x-www-form-urlencoded\" }\n", q(strings.Join(parts, "&")))
		case st.json != nil:
			j, _ := json.Marshal(st.json)
			fmt.Fprintf(&b, "    json: %s\n", j)
		case st.body != nil:
			fmt.Fprintf(&b, "    body: %s\n", q(escapeBraces(*st.body)))
		}
		if st.noFollow {
			b.WriteString("    follow_redirects: false\n")
		}
		if st.status > 0 {
			fmt.Fprintf(&b, "    expect: { status: %d }\n", st.status)
		}
		if len(st.captures) > 0 {
			b.WriteString("    capture:\n")
			for _, c := range st.captures {
				fmt.Fprintf(&b, "      %s: { %s: %s", c.name, c.kind, q(c.arg))
				if c.attr != "" {
					fmt.Fprintf(&b, ", attr: %s", q(c.attr))
				}
				b.WriteString(" }\n")
			}
		}
	}
	b.WriteString("load:\n  closed: { vus: 1, iterations: 1 }\n")
	return b.Bytes()
}

// rawQuery keeps a query with a repeated name in the URL, as recorded.
func rawQuery(qs []kv) string {
	if len(qs) == 0 || !dupKeys(qs) {
		return ""
	}
	parts := make([]string, len(qs))
	for k, p := range qs {
		parts[k] = formEscape(p.k) + "=" + formEscape(p.v)
	}
	return "?" + strings.Join(parts, "&")
}

func dupKeys(kvs []kv) bool {
	seen := map[string]bool{}
	for _, p := range kvs {
		if seen[p.k] {
			return true
		}
		seen[p.k] = true
	}
	return false
}

func flow(kvs []kv) string {
	parts := make([]string, len(kvs))
	for k, p := range kvs {
		parts[k] = q(p.k) + ": " + q(p.v)
	}
	return "{ " + strings.Join(parts, ", ") + " }"
}

// formEscape URL-encodes a form name or value, leaving its templates as
// they are (the values they give, tokens and ids, are sent as they come).
func formEscape(s string) string {
	var b strings.Builder
	for s != "" {
		i := strings.Index(s, "{{")
		j := strings.Index(s[max(i, 0):], "}}")
		if i < 0 || j < 0 {
			b.WriteString(url.QueryEscape(s))
			break
		}
		j += i + 2
		b.WriteString(url.QueryEscape(s[:i]))
		b.WriteString(s[i:j])
		s = s[j:]
	}
	return b.String()
}
