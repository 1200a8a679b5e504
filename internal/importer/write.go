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
	for k := 0; k < len(im.steps); k++ {
		st := im.steps[k]
		if !st.asset {
			page = st.name
			writeStep(&b, st, "  ")
			continue
		}
		// The assets a page loaded: one parallel group, as a browser
		// fetches them, but for those a later step takes a value from (a
		// group's requests end in no set order), fetched after it.
		j := k
		for j < len(im.steps) && im.steps[j].asset {
			j++
		}
		var group, after []*step
		for _, a := range im.steps[k:j] {
			if len(a.captures) > 0 || a.think > 0 {
				after = append(after, a)
			} else {
				group = append(group, a)
			}
		}
		if len(group) > 0 {
			fmt.Fprintf(&b, "  # assets of %s, fetched at once as a browser does: at most %d at a time, on the VU's connections\n", page, AssetsAtOnce)
			fmt.Fprintf(&b, "  - parallel:\n      name: %s\n      max: %d\n      steps:\n", q("assets of "+page), AssetsAtOnce)
			for _, a := range group {
				writeStep(&b, a, "        ")
			}
		}
		for _, a := range after {
			fmt.Fprintf(&b, "  # an asset of %s that a later step takes a value from: fetched on its own, after the others\n", page)
			writeStep(&b, a, "  ")
		}
		k = j - 1
	}
	b.WriteString("load:\n  closed: { vus: 1, iterations: 1 }\n")
	return b.Bytes()
}

// AssetsAtOnce is the most assets of a page a browser fetches at once over
// HTTP/1.1 (connections per origin): a kept page's group's max.
const AssetsAtOnce = 6

// writeStep renders one step: its "- " at indent, its keys under it.
func writeStep(b *bytes.Buffer, st *step, indent string) {
	in := indent + "  "
	if st.think > 0 {
		fmt.Fprintf(b, "%s- think: %s\n", indent, st.think.Round(10*time.Millisecond))
	}
	if st.note != "" {
		fmt.Fprintf(b, "%s# %s\n", indent, st.note)
	}
	fmt.Fprintf(b, "%s- %s: %s\n", indent, strings.ToLower(st.method), q(st.url+rawQuery(st.query)))
	fmt.Fprintf(b, "%sname: %s\n", in, q(st.name))
	if len(st.query) > 0 && !dupKeys(st.query) {
		fmt.Fprintf(b, "%squery: %s\n", in, flow(st.query))
	}
	if len(st.headers) > 0 {
		fmt.Fprintf(b, "%sheaders: %s\n", in, flow(st.headers))
	}
	switch {
	case st.form != nil && !dupKeys(st.form):
		fmt.Fprintf(b, "%sform: %s\n", in, flow(st.form))
	case st.form != nil:
		parts := make([]string, len(st.form))
		for k, f := range st.form {
			parts[k] = formEscape(f.k) + "=" + formEscape(f.v)
		}
		fmt.Fprintf(b, "%sbody: %s\n%sheaders: { \"Content-Type\": \"application/x-www-form-urlencoded\" }\n", in, q(strings.Join(parts, "&")), in)
	case st.multipart != nil:
		writeMultipart(b, st.multipart, in)
	case st.json != nil:
		j, _ := json.Marshal(st.json)
		fmt.Fprintf(b, "%sjson: %s\n", in, j)
	case st.body != nil:
		fmt.Fprintf(b, "%sbody: %s\n", in, q(escapeBraces(*st.body)))
	}
	if st.noFollow {
		fmt.Fprintf(b, "%sfollow_redirects: false\n", in)
	}
	if st.status > 0 {
		fmt.Fprintf(b, "%sexpect: { status: %d }\n", in, st.status)
	}
	if len(st.captures) > 0 {
		fmt.Fprintf(b, "%scapture:\n", in)
		for _, c := range st.captures {
			fmt.Fprintf(b, "%s  %s: { %s: %s", in, c.name, c.kind, q(c.arg))
			if c.attr != "" {
				fmt.Fprintf(b, ", attr: %s", q(c.attr))
			}
			b.WriteString(" }\n")
		}
	}
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

// writeMultipart writes a multipart: body: its fields as a mapping (a list
// of one-entry mappings when a name repeats), then its files.
func writeMultipart(b *bytes.Buffer, mp *multipartBody, in string) {
	fmt.Fprintf(b, "%smultipart:\n", in)
	switch {
	case len(mp.fields) == 0:
	case !dupKeys(mp.fields):
		fmt.Fprintf(b, "%s  fields: %s\n", in, flow(mp.fields))
	default:
		fmt.Fprintf(b, "%s  fields:\n", in)
		for _, f := range mp.fields {
			fmt.Fprintf(b, "%s    - %s: %s\n", in, q(f.k), q(f.v))
		}
	}
	if len(mp.files) == 0 {
		return
	}
	fmt.Fprintf(b, "%s  files:\n", in)
	for _, f := range mp.files {
		if f.omitted != "" {
			fmt.Fprintf(b, "%s    # the recorded file (%s) is not written: put it beside the plan and send it with file: NAME\n", in, f.omitted)
		}
		fmt.Fprintf(b, "%s    - { name: %s, filename: %s, content_type: %s", in, q(f.name), q(f.filename), q(f.contentType))
		if f.content != "" {
			fmt.Fprintf(b, ", content: %s", q(escapeBraces(f.content)))
		}
		b.WriteString(" }\n")
	}
}
