package importer

import (
	"encoding/json"
	"fmt"
	"html"
	"net/http"
	"net/url"
	"path"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/PuerkitoBio/goquery"

	"github.com/loadlab/loadlab/internal/secret"
)

// Options steer an import.
type Options struct {
	// Target replaces the recorded origin as the plan's target.
	Target string
	// Hosts are kept besides the target's origin (host or host:port).
	Hosts []string
	// ThinkMax caps each think time taken from the recording; zero is 5s,
	// negative drops think times.
	ThinkMax time.Duration
	// KeepAssets keeps the target's stylesheets, scripts, images and fonts
	// as steps named "asset METHOD PATH" after the page that loaded them,
	// each page's in one parallel group (at most AssetsAtOnce at a time),
	// fetched at once as a browser does.
	KeepAssets bool
}

// Result is an imported plan and what the import did.
type Result struct {
	Plan     []byte   // the plan, YAML
	Target   string   // the origin the plan loads
	Steps    int      // requests in the plan
	Inferred []string // one line per capture: what, where from, why
	Secrets  []string // one line per secret variable
	// Notes say what the recording lacks that the plan needs: a body or a
	// file's bytes that the browser left out of the HAR.
	Notes  []string
	Assets []string // assets, METHOD URL: dropped, or kept as steps with KeepAssets
	Hosts  []string // dropped third-party hosts, "host (N requests)"
	// SecretValues are the recorded values of the secret variables, by
	// the environment variable each is read from (LOADLAB_PASSWORD), for
	// --check to run the plan with (as -e NAME=VALUE); never written.
	SecretValues map[string]string
}

type kv struct{ k, v string }

type capture struct{ name, kind, arg, attr string }

type step struct {
	method, url, name string
	query, headers    []kv
	form              []kv
	multipart         *multipartBody
	json              any
	body              *string
	status            int
	noFollow          bool
	think             time.Duration
	note              string // a comment written before the step
	captures          []capture
	asset             bool // a stylesheet, script, image or font kept (KeepAssets)
}

// importer holds the state of one import.
type importer struct {
	opts    Options
	origin  string // scheme://host of the recorded target
	target  string // the plan's target: origin, or Options.Target
	entries []*entry
	steps   []*step
	// known maps a recorded dynamic value to the template expression that
	// gives it in the plan (a variable's name or an expression).
	known   map[string]string
	names   map[string]bool
	secrets map[string]string // var -> the environment variable it is read from
	res     *Result
}

// HAR imports a HAR recording.
func HAR(file string, data []byte, opts Options) (*Result, error) {
	h, err := parseHAR(file, data)
	if err != nil {
		return nil, err
	}
	if opts.ThinkMax == 0 {
		opts.ThinkMax = 5 * time.Second
	}
	im := &importer{opts: opts, known: map[string]string{}, names: map[string]bool{}, secrets: map[string]string{}, res: &Result{SecretValues: map[string]string{}}}
	all := h.Log.Entries
	sort.SliceStable(all, func(i, j int) bool { return all[i].start.Before(all[j].start) })
	keep := map[string]bool{}
	for _, hst := range opts.Hosts {
		keep[strings.ToLower(hst)] = true
	}
	dropped := map[string]int{}
	var lastEnd time.Time
	for i := range all {
		e := &all[i]
		u, err := url.Parse(e.Request.URL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") {
			continue // data:, blob:, chrome-extension: ...
		}
		o := u.Scheme + "://" + u.Host
		if im.origin == "" && !isAsset(e, u) {
			im.origin = o
		}
		if o != im.origin && !keep[strings.ToLower(u.Host)] && !keep[strings.ToLower(u.Hostname())] {
			dropped[u.Host]++
			lastEnd = later(lastEnd, e.end())
			continue
		}
		asset := isAsset(e, u)
		if asset {
			im.res.Assets = append(im.res.Assets, e.Request.Method+" "+e.Request.URL)
			if !opts.KeepAssets || len(im.entries) == 0 {
				lastEnd = later(lastEnd, e.end())
				continue
			}
		}
		var think time.Duration
		if !lastEnd.IsZero() && !asset { // a page's assets load without a pause
			think = e.start.Sub(lastEnd).Round(10 * time.Millisecond)
		}
		im.entries = append(im.entries, e)
		im.steps = append(im.steps, &step{think: think, asset: asset})
		lastEnd = later(lastEnd, e.end())
	}
	for hst, n := range dropped {
		im.res.Hosts = append(im.res.Hosts, fmt.Sprintf("%s (%d requests)", hst, n))
	}
	sort.Strings(im.res.Hosts)
	im.target = im.origin
	if im.pages() == 0 {
		what := "the target"
		if im.origin != "" {
			what = im.origin
		}
		return nil, fmt.Errorf("%w: %s: no entries for %s (%d entries, %d assets, %d on other hosts): record a session on the site, or name its host with --host", ErrInput, file, what, len(all), len(im.res.Assets), len(all)-len(im.res.Assets))
	}
	if opts.Target != "" {
		t, err := url.Parse(opts.Target)
		if err != nil || (t.Scheme != "http" && t.Scheme != "https") || t.Host == "" {
			return nil, fmt.Errorf("%w: target %q: want an http:// or https:// URL", ErrInput, opts.Target)
		}
		im.target = t.Scheme + "://" + t.Host
	}
	im.res.Target = im.target
	for i := range im.entries {
		im.convert(i)
	}
	im.res.Steps = len(im.steps)
	if opts.KeepAssets {
		im.res.Steps = im.pages()
	}
	im.res.Plan = im.write(file)
	return im.res, nil
}

// pages counts the steps that are not assets.
func (im *importer) pages() int {
	n := 0
	for _, st := range im.steps {
		if !st.asset {
			n++
		}
	}
	return n
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

var assetTypes = map[string]bool{"stylesheet": true, "script": true, "image": true, "font": true, "media": true, "manifest": true, "texttrack": true}

var assetExt = map[string]bool{".css": true, ".js": true, ".mjs": true, ".map": true, ".png": true, ".jpg": true, ".jpeg": true, ".gif": true, ".svg": true, ".webp": true, ".avif": true, ".ico": true, ".woff": true, ".woff2": true, ".ttf": true, ".otf": true, ".eot": true, ".mp4": true, ".webm": true}

// isAsset says whether an entry is a stylesheet, script, image, font or
// favicon: by the browser's resource type, the response's type or the path.
func isAsset(e *entry, u *url.URL) bool {
	if assetTypes[strings.ToLower(e.ResourceType)] {
		return true
	}
	mt := strings.ToLower(e.Response.Content.MimeType)
	if strings.HasPrefix(mt, "image/") || strings.HasPrefix(mt, "font/") || strings.HasPrefix(mt, "text/css") || strings.Contains(mt, "javascript") {
		return true
	}
	return e.Request.Method == "GET" && assetExt[strings.ToLower(path.Ext(u.Path))]
}

// candidate is a value a request sent, where it sent it.
type candidate struct {
	value string
	field string // the form field, query parameter, JSON key or header it came in
	// secret: a value typed into a password field or an Authorization
	// header: if no response gave it, a secret variable.
	secret bool
}

// convert turns entry i into step i, correlating its dynamic values.
func (im *importer) convert(i int) {
	e, st := im.entries[i], im.steps[i]
	u, _ := url.Parse(e.Request.URL)
	st.method = strings.ToUpper(e.Request.Method)
	st.status = e.Response.Status
	st.noFollow = st.status >= 300 && st.status < 400 && header(e.Response.Headers, "Location") != ""
	if st.think > 0 && im.opts.ThinkMax > 0 {
		st.think = min(st.think, im.opts.ThinkMax)
	} else {
		st.think = 0
	}

	st.name = st.method + " " + pageName(u.EscapedPath(), nil)
	// Path segments.
	segs := strings.Split(u.EscapedPath(), "/")
	prev := ""
	for k, s := range segs {
		if s == "" {
			continue
		}
		raw, err := url.PathUnescape(s)
		if err == nil {
			if ref := im.correlate(i, candidate{value: raw, field: idName(prev)}, true); ref != "" {
				segs[k] = "{{ " + ref + " }}"
			}
		}
		prev = raw
	}
	st.url = strings.Join(segs, "/")
	if st.url == "" {
		st.url = "/"
	}
	st.name = st.method + " " + pageName(u.EscapedPath(), segs)
	if st.asset {
		st.name = "asset " + st.name
		if st.status == http.StatusNotModified { // the browser's cache revalidated it; a plan has none
			st.status = http.StatusOK
		}
	}
	if u.Scheme+"://"+u.Host != im.origin {
		st.url = u.Scheme + "://" + u.Host + st.url
	}
	for _, q := range queryPairs(u) {
		st.query = append(st.query, kv{q.k, im.template(i, candidate{value: q.v, field: q.k, secret: secret.QueryName(q.k)})})
	}

	// Headers worth sending: Authorization, a JSON Accept, custom X- headers.
	var contentType string
	for _, h := range e.Request.Headers {
		n := strings.ToLower(h.Name)
		switch {
		case n == "content-type":
			contentType = h.Value
		case n == "authorization":
			scheme, val, ok := strings.Cut(h.Value, " ")
			if ok && val != "" {
				if ref := im.correlate(i, candidate{value: val, field: "token"}, false); ref != "" {
					st.headers = append(st.headers, kv{h.Name, scheme + " {{ " + ref + " }}"})
					continue
				}
			}
			st.headers = append(st.headers, kv{h.Name, im.template(i, candidate{value: h.Value, field: "authorization", secret: true})})
		case n == "accept" && strings.Contains(h.Value, "json"):
			st.headers = append(st.headers, kv{h.Name, h.Value})
		case strings.HasPrefix(n, "x-") && n != "x-forwarded-for":
			st.headers = append(st.headers, kv{h.Name, im.template(i, candidate{value: h.Value, field: h.Name, secret: secret.Name(h.Name)})})
		}
	}

	// The body.
	if pd := e.Request.PostData; (pd == nil || pd.Text == "" && len(pd.Params) == 0) && header(e.Request.Headers, "Content-Length") != "" && header(e.Request.Headers, "Content-Length") != "0" {
		// A browser's HAR leaves out a body made of a file or binary data
		// (a form with a chosen file, fetch() of a File or ArrayBuffer).
		st.note = fmt.Sprintf("the recording has no body for this request (Content-Length %s): browsers leave bodies made of files or binary data out of a HAR; the plan sends none: give it body_file: or a multipart: files", header(e.Request.Headers, "Content-Length"))
		im.res.Notes = append(im.res.Notes, st.name+": "+st.note)
		if contentType != "" {
			st.headers = append(st.headers, kv{"Content-Type", contentType})
		}
	}
	if pd := e.Request.PostData; pd != nil && (pd.Text != "" || len(pd.Params) > 0) {
		mt := strings.ToLower(pd.MimeType)
		if mt == "" {
			mt = strings.ToLower(contentType)
		}
		switch {
		case strings.HasPrefix(mt, "application/x-www-form-urlencoded"):
			// The text is what was sent; params are written escaped by some
			// browsers and not by others, so they are read only without it.
			params := pd.Params
			if pd.Text != "" {
				params = nil
				for _, p := range strings.Split(pd.Text, "&") {
					if p == "" {
						continue
					}
					k, v, _ := strings.Cut(p, "=")
					k, _ = url.QueryUnescape(k)
					v, _ = url.QueryUnescape(v)
					params = append(params, param{Name: k, Value: v}) // repeated names kept, in order
				}
			} else {
				for j := range params { // some browsers write them escaped
					if v, err := url.QueryUnescape(params[j].Value); err == nil {
						params[j].Value = v
					}
					if k, err := url.QueryUnescape(params[j].Name); err == nil {
						params[j].Name = k
					}
				}
			}
			for _, p := range params {
				st.form = append(st.form, kv{p.Name, im.template(i, candidate{value: p.Value, field: p.Name, secret: secret.Name(p.Name)})})
			}
		case strings.HasPrefix(mt, "multipart/form-data"):
			if mp := im.multipart(i, pd.MimeType, contentType, pd.Text, pd.Params); mp != nil {
				st.multipart = mp
				break
			}
			b := pd.Text
			st.body = &b
			if contentType != "" {
				st.headers = append(st.headers, kv{"Content-Type", contentType})
			}
		case strings.Contains(mt, "json"):
			var v any
			if json.Unmarshal([]byte(pd.Text), &v) == nil {
				st.json = im.templateJSON(i, "", v)
				break
			}
			fallthrough
		default:
			b := pd.Text
			st.body = &b
			if contentType != "" {
				st.headers = append(st.headers, kv{"Content-Type", contentType})
			}
		}
	}
}

// templateJSON templates the leaves of a JSON request body.
func (im *importer) templateJSON(i int, key string, v any) any {
	switch v := v.(type) {
	case map[string]any:
		out := map[string]any{}
		for k, c := range v {
			out[k] = im.templateJSON(i, k, c)
		}
		return out
	case []any:
		out := make([]any, len(v))
		for j, c := range v {
			out[j] = im.templateJSON(i, key, c)
		}
		return out
	case string:
		return im.template(i, candidate{value: v, field: key, secret: secret.Name(key)})
	case float64:
		s := strconv.FormatFloat(v, 'f', -1, 64)
		if t := im.template(i, candidate{value: s, field: key}); t != s {
			return t
		}
		return v
	}
	return v
}

// template returns the plan's text for a recorded value: a template when
// the value (or a token inside it) came from an earlier response or is a
// secret, the value itself otherwise.
func (im *importer) template(i int, c candidate) string {
	if c.value == "" {
		return ""
	}
	if ref := im.correlate(i, c, false); ref != "" {
		return "{{ " + ref + " }}"
	}
	// A known token inside a longer value ("Bearer X", "a,X").
	out := c.value
	for v, ref := range im.known {
		if len(v) >= minToken && strings.Contains(out, v) {
			out = strings.ReplaceAll(out, v, "{{ "+ref+" }}")
		}
	}
	if out != c.value {
		return out
	}
	if c.secret {
		name := im.varName(c.field, "secret")
		env := envFor(name)
		im.known[c.value] = name
		im.secrets[name] = env
		im.res.SecretValues[env] = c.value
		im.res.Secrets = append(im.res.Secrets, fmt.Sprintf("%s: the recorded %s is a secret: not written; the plan reads it from the environment: export %s=...", name, c.field, env))
		return "{{ " + name + " }}"
	}
	return escapeBraces(out)
}

// envFor is the environment variable a secret variable is read from:
// password is LOADLAB_PASSWORD.
func envFor(name string) string { return "LOADLAB_" + strings.ToUpper(name) }

func escapeBraces(s string) string {
	if strings.Contains(s, "{{") {
		return strings.ReplaceAll(s, "{{", `{{ "{{" }}`)
	}
	return s
}

// minToken is the shortest value correlated wherever it appears in a
// response: shorter ones (a product id 3) are only taken from a Location
// header or a JSON field.
const minToken = 8

// correlate finds where a request's value first appeared in an earlier
// response and returns the template expression for it, adding the capture
// to that response's step; "" when it appeared in none.
func (im *importer) correlate(i int, c candidate, pathSeg bool) string {
	v := c.value
	if ref, ok := im.known[v]; ok {
		return ref
	}
	if v == "" || len(v) > 4096 {
		return ""
	}
	short := len(v) < minToken
	if short && !isID(v) || !short && !isID(v) && !tokenLike(v) {
		return ""
	}
	for j := 0; j < i; j++ {
		e := im.entries[j]
		// A Location header: the whole URL, or one of its path segments.
		if loc := header(e.Response.Headers, "Location"); loc != "" {
			if loc == v {
				name := im.varName(c.field, "location")
				im.addCapture(j, capture{name: name, kind: "header", arg: "Location"}, fmt.Sprintf("%s: the Location header of %s (%s), sent back in %s", name, im.steps[j].name, loc, im.steps[i].name))
				im.known[v] = name
				return name
			}
			parts := strings.Split(loc, "/")
			for k, p := range parts {
				if p == v {
					name := im.varName(strings.TrimSuffix(c.field, "_id")+"_location", "location")
					im.addCapture(j, capture{name: name, kind: "header", arg: "Location"}, fmt.Sprintf("%s: the Location header of %s (%s), whose segment %d is %s, an id sent in %s", name, im.steps[j].name, loc, k, v, im.steps[i].name))
					ref := fmt.Sprintf("split(%s, '/')[%d]", name, k)
					im.known[v] = ref
					return ref
				}
			}
		}
		body := e.body()
		mt := strings.ToLower(e.Response.Content.MimeType)
		isHTML := strings.Contains(mt, "html") || strings.HasPrefix(strings.TrimSpace(body), "<")
		raw := strings.Contains(body, v)
		// An HTML page may write the value with character references, as
		// Rack's escape_html writes a base64 token's / (&#x2F;).
		if !raw && !(isHTML && !short && strings.Contains(body, "&") && strings.Contains(html.UnescapeString(body), v)) {
			continue
		}
		if raw && strings.Contains(mt, "json") {
			var doc any
			if json.Unmarshal([]byte(body), &doc) == nil {
				if p, key, ok := findJSON(doc, "$", "", v); ok {
					name := im.varName(pick(c.field, key), "value")
					why := "an id"
					if len(v) >= minToken {
						why = "a token"
					}
					im.addCapture(j, capture{name: name, kind: "json", arg: p}, fmt.Sprintf("%s: %s of %s's JSON response, %s sent in %s", name, p, im.steps[j].name, why, im.steps[i].name))
					im.known[v] = name
					return name
				}
			}
		}
		if short {
			continue
		}
		if isHTML {
			if sel, attr, why, ok := findHTML(body, v); ok {
				name := im.varName(c.field, "token")
				im.addCapture(j, capture{name: name, kind: "css", arg: sel, attr: attr}, fmt.Sprintf("%s: %s of %s (%s), sent as %s in %s", name, why, im.steps[j].name, sel, c.field, im.steps[i].name))
				im.known[v] = name
				return name
			}
		}
		if !raw {
			continue
		}
		if re, ok := findRegex(body, v); ok {
			name := im.varName(c.field, "token")
			im.addCapture(j, capture{name: name, kind: "regex", arg: re}, fmt.Sprintf("%s: text of %s's response (regex %s), sent as %s in %s", name, im.steps[j].name, re, c.field, im.steps[i].name))
			im.known[v] = name
			return name
		}
	}
	_ = pathSeg
	return ""
}

func pick(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

func (im *importer) addCapture(j int, c capture, why string) {
	im.steps[j].captures = append(im.steps[j].captures, c)
	im.res.Inferred = append(im.res.Inferred, why)
}

var idLike = regexp.MustCompile(`^(\d+|[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}|[0-9a-fA-F]{16,})$`)

func isID(s string) bool { return idLike.MatchString(s) }

// tokenLike says whether a long value looks generated (a CSRF token, a
// session value) rather than typed or a word of the site: no spaces, no
// @, and a digit in it or both cases, or 20 characters or more of a
// token's alphabet alone. That last is for one-case tokens: Go's
// rand.Text() is 26 characters of base32 (A-Z, 2-7), and 0.45% of them
// have no digit, (26/32)^26; the demo shop's CSRF token was then not
// correlated and the imported plan asked for it from the environment.
func tokenLike(s string) bool {
	if strings.ContainsAny(s, " @\t\n") {
		return false
	}
	digit := strings.ContainsAny(s, "0123456789")
	upper := strings.ToLower(s) != s
	lower := strings.ToUpper(s) != s
	return digit || upper && lower || len(s) >= 20 && tokenAlphabet.MatchString(s)
}

var tokenAlphabet = regexp.MustCompile(`^[A-Za-z0-9_+/=.-]+$`)

// pageName is a step's name: its path with ids and templated segments as :id.
func pageName(p string, segs []string) string {
	orig := strings.Split(p, "/")
	out := make([]string, len(orig))
	for k, s := range orig {
		switch {
		case k < len(segs) && segs[k] != s:
			out[k] = ":id"
		case isID(s) || len(s) >= 24 && !strings.ContainsAny(s, ".-_"):
			out[k] = ":id"
		default:
			out[k] = s
		}
	}
	if n := strings.Join(out, "/"); n != "" {
		return n
	}
	return "/"
}

// idName names a path segment's variable after the segment before it:
// /products/3 gives product_id.
func idName(prev string) string {
	if prev == "" {
		return "id"
	}
	return strings.TrimSuffix(prev, "s") + "_id"
}

var notName = regexp.MustCompile(`[^a-z0-9_]+`)

var reserved = map[string]bool{"vu": true, "iteration": true, "scenario": true, "env": true, "true": true, "false": true, "nil": true, "in": true, "not": true, "and": true, "or": true, "split": true}

// varName makes a fresh variable name from a field name.
func (im *importer) varName(field, fallback string) string {
	n := strings.Trim(notName.ReplaceAllString(strings.ToLower(field), "_"), "_")
	if n == "" || n[0] >= '0' && n[0] <= '9' || reserved[n] {
		n = fallback
	}
	name := n
	for k := 2; im.names[name]; k++ {
		name = fmt.Sprintf("%s_%d", n, k)
	}
	im.names[name] = true
	return name
}

// findJSON finds the first leaf of doc whose text is v.
func findJSON(doc any, p, key, v string) (string, string, bool) {
	switch d := doc.(type) {
	case map[string]any:
		keys := make([]string, 0, len(d))
		for k := range d {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			kp := p + "." + k
			if !regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`).MatchString(k) {
				kp = p + "[" + strconv.Quote(k) + "]"
			}
			if r, rk, ok := findJSON(d[k], kp, k, v); ok {
				return r, rk, true
			}
		}
	case []any:
		for n, c := range d {
			if r, rk, ok := findJSON(c, fmt.Sprintf("%s[%d]", p, n), key, v); ok {
				return r, rk, true
			}
		}
	case string:
		return p, key, d == v
	case float64:
		return p, key, strconv.FormatFloat(d, 'f', -1, 64) == v
	}
	return "", "", false
}

// findHTML finds v as a meta tag's content or an input's value, with a
// selector whose first match holds it.
func findHTML(body, v string) (sel, attr, why string, ok bool) {
	doc, err := goquery.NewDocumentFromReader(strings.NewReader(body))
	if err != nil {
		return "", "", "", false
	}
	doc.Find("meta[name]").EachWithBreak(func(_ int, s *goquery.Selection) bool {
		if c, _ := s.Attr("content"); c == v {
			n, _ := s.Attr("name")
			sel, attr, why = fmt.Sprintf("meta[name=%q]", n), "content", fmt.Sprintf("the <meta name=%q> tag", n)
			return false
		}
		return true
	})
	if sel != "" {
		return sel, attr, why, first(doc, sel, attr) == v
	}
	doc.Find("input[name]").EachWithBreak(func(_ int, s *goquery.Selection) bool {
		if c, _ := s.Attr("value"); c == v {
			n, _ := s.Attr("name")
			sel, attr, why = fmt.Sprintf("input[name=%q]", n), "value", fmt.Sprintf("the form field %s", n)
			if f := s.Closest("form[id]"); f.Length() > 0 {
				id, _ := f.Attr("id")
				if first(doc, sel, attr) != v {
					sel = fmt.Sprintf("form#%s %s", id, sel)
				}
			}
			return false
		}
		return true
	})
	if sel != "" {
		return sel, attr, why, first(doc, sel, attr) == v
	}
	return "", "", "", false
}

func first(doc *goquery.Document, sel, attr string) string {
	s := doc.Find(sel).First()
	a, _ := s.Attr(attr)
	return a
}

// findRegex makes a regex whose first group's first match in body is v:
// the text just before v, then a run of the characters v is made of.
func findRegex(body, v string) (string, bool) {
	at := strings.Index(body, v)
	start := max(0, at-24)
	if nl := strings.LastIndexAny(body[start:at], "\n>"); nl >= 0 {
		start += nl + 1
	}
	prefix := body[start:at]
	if len(strings.TrimSpace(prefix)) < 3 {
		return "", false
	}
	re := regexp.QuoteMeta(prefix) + `([A-Za-z0-9_\-.~+/=]+)`
	r, err := regexp.Compile(re)
	if err != nil {
		return "", false
	}
	m := r.FindStringSubmatch(body)
	return re, m != nil && m[1] == v
}

// queryPairs are a URL's query parameters in their order.
func queryPairs(u *url.URL) []kv {
	var out []kv
	for _, p := range strings.Split(u.RawQuery, "&") {
		if p == "" {
			continue
		}
		k, v, _ := strings.Cut(p, "=")
		k, _ = url.QueryUnescape(k)
		v, _ = url.QueryUnescape(v)
		out = append(out, kv{k, v})
	}
	return out
}
