package expr

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strings"

	"github.com/andybalholm/cascadia"
	"github.com/theory/jsonpath"
	"golang.org/x/net/html"
)

// Response is a response as captures and expectations see it. The body is
// decoded as JSON or parsed as HTML at most once, and only if asked.
type Response struct {
	Status int
	Header []byte // raw header lines
	Body   []byte

	jsonDone bool
	jsonVal  any
	jsonErr  error
	htmlDone bool
	doc      *html.Node
	htmlErr  error
}

// Reset points the response at a new exchange's bytes.
func (r *Response) Reset(status int, header, body []byte) {
	*r = Response{Status: status, Header: header, Body: body}
}

// HeaderValues returns the values of a header, in order.
func (r *Response) HeaderValues(name string, out []string) []string {
	h := r.Header
	for len(h) > 0 {
		line := h
		if i := bytes.IndexByte(h, '\n'); i >= 0 {
			line, h = h[:i], h[i+1:]
		} else {
			h = nil
		}
		line = bytes.TrimRight(line, "\r")
		colon := bytes.IndexByte(line, ':')
		if colon <= 0 || !strings.EqualFold(string(line[:colon]), name) {
			continue
		}
		out = append(out, string(bytes.TrimSpace(line[colon+1:])))
	}
	return out
}

// HeaderValue returns the first value of a header.
func (r *Response) HeaderValue(name string) (string, bool) {
	vs := r.HeaderValues(name, nil)
	if len(vs) == 0 {
		return "", false
	}
	return vs[0], true
}

// JSON decodes the body.
func (r *Response) JSON() (any, error) {
	if !r.jsonDone {
		r.jsonDone = true
		r.jsonErr = json.Unmarshal(r.Body, &r.jsonVal)
		if r.jsonErr != nil {
			r.jsonErr = fmt.Errorf("the body is not JSON: %w", r.jsonErr)
		}
	}
	return r.jsonVal, r.jsonErr
}

// HTML parses the body.
func (r *Response) HTML() (*html.Node, error) {
	if !r.htmlDone {
		r.htmlDone = true
		r.doc, r.htmlErr = html.Parse(bytes.NewReader(r.Body))
	}
	return r.doc, r.htmlErr
}

// CaptureKind is where a capture reads its value.
type CaptureKind int

const (
	FromJSON CaptureKind = iota
	FromHeader
	FromCookie
	FromRegex
	FromCSS
)

// Capture takes a value out of a response.
type Capture struct {
	Kind  CaptureKind
	Arg   string // the path, header or cookie name, pattern or selector
	Attr  string // CSS: the attribute to read; empty means the element's text
	path  *jsonpath.Path
	re    *regexp.Regexp
	sel   cascadia.Sel
	group int
	// For a simple selector (one compound selector, no combinators or
	// pseudo-classes) with an attribute to read, the body is scanned tag by
	// tag instead of parsed into a tree: a CSRF token costs a few
	// microseconds, not a full HTML parse.
	stream bool
	tag    string // the tag name the selector requires, lower case; "" for any
}

// CompileJSONPath compiles a JSONPath (RFC 9535) such as $.token or $.items[0].id.
func CompileJSONPath(p string) (*jsonpath.Path, error) {
	path, err := jsonpath.Parse(p)
	if err != nil {
		return nil, fmt.Errorf("bad JSONPath %q: %s", p, strings.TrimPrefix(err.Error(), "jsonpath: "))
	}
	return path, nil
}

// NewCapture compiles a capture.
func NewCapture(kind CaptureKind, arg, attr string) (*Capture, error) {
	c := &Capture{Kind: kind, Arg: arg, Attr: attr}
	var err error
	switch kind {
	case FromJSON:
		c.path, err = CompileJSONPath(arg)
	case FromHeader, FromCookie:
		if arg == "" || strings.ContainsAny(arg, " :\r\n") {
			err = fmt.Errorf("bad name %q", arg)
		}
	case FromRegex:
		c.re, err = regexp.Compile(arg)
		if err != nil {
			err = fmt.Errorf("bad regular expression %q: %s", arg, strings.TrimPrefix(err.Error(), "error parsing regexp: "))
		} else if c.re.NumSubexp() > 0 {
			c.group = 1
		}
	case FromCSS:
		c.sel, err = cascadia.Parse(arg)
		if err != nil {
			err = fmt.Errorf("bad CSS selector %q: %v", arg, err)
		} else if attr != "" {
			c.stream, c.tag = simpleSelector(arg)
		}
	}
	if err != nil {
		return nil, err
	}
	return c, nil
}

// Extract returns the captured value; ok is false when nothing matched.
func (c *Capture) Extract(r *Response) (v any, ok bool, err error) {
	switch c.Kind {
	case FromJSON:
		doc, err := r.JSON()
		if err != nil {
			return nil, false, err
		}
		for v := range c.path.Select(doc).All() {
			return v, true, nil
		}
		return nil, false, nil
	case FromHeader:
		v, ok := r.HeaderValue(c.Arg)
		return v, ok, nil
	case FromCookie:
		for _, line := range r.HeaderValues("Set-Cookie", nil) {
			ck, err := http.ParseSetCookie(line)
			if err == nil && ck.Name == c.Arg {
				return ck.Value, true, nil
			}
		}
		return nil, false, nil
	case FromRegex:
		m := c.re.FindSubmatch(r.Body)
		if m == nil {
			return nil, false, nil
		}
		return string(m[c.group]), true, nil
	case FromCSS:
		if c.stream {
			v, ok := c.scan(r.Body)
			if !ok {
				return nil, false, nil
			}
			return v, true, nil
		}
		doc, err := r.HTML()
		if err != nil {
			return nil, false, err
		}
		n := cascadia.Query(doc, c.sel)
		if n == nil {
			return nil, false, nil
		}
		if c.Attr == "" {
			return strings.TrimSpace(text(n)), true, nil
		}
		for _, a := range n.Attr {
			if a.Key == c.Attr {
				return a.Val, true, nil
			}
		}
		return nil, false, nil
	}
	return nil, false, nil
}

func text(n *html.Node) string {
	var b strings.Builder
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.TextNode {
			b.WriteString(n.Data)
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(n)
	return b.String()
}

// Describe says what a capture reads, for messages.
func (c *Capture) Describe() string {
	switch c.Kind {
	case FromJSON:
		return "JSONPath " + c.Arg
	case FromHeader:
		return "header " + c.Arg
	case FromCookie:
		return "cookie " + c.Arg
	case FromRegex:
		return "regex " + c.Arg
	}
	if c.Attr != "" {
		return fmt.Sprintf("CSS %s [%s]", c.Arg, c.Attr)
	}
	return "CSS " + c.Arg + " (text)"
}

// Missing says what a capture that found nothing did not find, for
// messages: "no Location header".
func (c *Capture) Missing() string {
	switch c.Kind {
	case FromJSON:
		return "nothing at JSONPath " + c.Arg
	case FromHeader:
		return "no " + c.Arg + " header"
	case FromCookie:
		return "no Set-Cookie of cookie " + c.Arg
	case FromRegex:
		return "no match of regex " + c.Arg
	}
	if c.Attr != "" {
		return fmt.Sprintf("no %s attribute on an element matching CSS %s", c.Attr, c.Arg)
	}
	return "no element matching CSS " + c.Arg
}

// Equal compares a response value with an expected one by their text, so
// that 3, 3.0 and "3" agree.
func Equal(got, want any) bool {
	return format(got) == format(want)
}

// simpleSelector reports whether sel is one compound selector without
// combinators, pseudo-classes or groups, and which tag it names.
func simpleSelector(sel string) (simple bool, tag string) {
	sel = strings.TrimSpace(sel)
	depth, quote := 0, byte(0)
	for i := 0; i < len(sel); i++ {
		c := sel[i]
		switch {
		case quote != 0:
			if c == quote {
				quote = 0
			}
		case c == '"' || c == '\'':
			quote = c
		case c == '[':
			depth++
		case c == ']':
			depth--
		case depth == 0 && strings.IndexByte(" >+~:,\\", c) >= 0:
			return false, ""
		}
	}
	end := strings.IndexAny(sel, "[#.")
	if end < 0 {
		end = len(sel)
	}
	tag = strings.ToLower(sel[:end])
	if tag == "*" {
		tag = ""
	}
	return true, tag
}

// scan finds the first element that matches and returns its attribute. It
// walks the start tags itself rather than through html.Tokenizer, which
// allocates for every tag; it skips comments, declarations, end tags and the
// contents of script, style, textarea and title as the HTML spec's tokenizer
// does, and decodes character references in attribute values.
func (c *Capture) scan(body []byte) (string, bool) {
	var n html.Node
	n.Type = html.ElementNode
	var found string
	ok := false
	scanStartTags(body, func(name []byte, attrs []byte) bool {
		if c.tag != "" && string(name) != c.tag {
			return true
		}
		n.Data = string(name)
		n.Attr = parseAttrs(attrs, n.Attr[:0])
		if !c.sel.Match(&n) {
			return true
		}
		for _, a := range n.Attr {
			if a.Key == c.Attr {
				found, ok = a.Val, true
				return false
			}
		}
		return false
	})
	return found, ok
}

// scanStartTags calls fn with the lower-cased name and the raw attribute
// text of every start tag, in order, until fn returns false.
func scanStartTags(b []byte, fn func(name, attrs []byte) bool) {
	var lower [32]byte
	i := 0
	for {
		j := bytes.IndexByte(b[i:], '<')
		if j < 0 {
			return
		}
		i += j + 1
		if i >= len(b) {
			return
		}
		switch c := b[i]; {
		case bytes.HasPrefix(b[i:], []byte("!--")):
			i += 3
			switch { // "<!-->" and "<!--->" are whole (empty) comments
			case bytes.HasPrefix(b[i:], []byte(">")):
				i++
				continue
			case bytes.HasPrefix(b[i:], []byte("->")):
				i += 2
				continue
			}
			end := bytes.Index(b[i:], []byte("-->"))
			if end < 0 {
				return
			}
			i += end + 3
			continue
		case c == '!' || c == '?' || c == '/':
			end := bytes.IndexByte(b[i:], '>')
			if end < 0 {
				return
			}
			i += end + 1
			continue
		case !isLetter(c):
			continue // a "<" in text
		}
		start := i
		for i < len(b) && !isSpace(b[i]) && b[i] != '>' && b[i] != '/' {
			i++
		}
		name := b[start:i]
		if len(name) <= len(lower) {
			for k, c := range name {
				if 'A' <= c && c <= 'Z' {
					c += 'a' - 'A'
				}
				lower[k] = c
			}
			name = lower[:len(name)]
		}
		attrStart := i
		end := tagEnd(b, i)
		if end < 0 {
			return // a tag cut off by the end of the body is no tag
		}
		attrs := b[attrStart:end]
		i = min(end+1, len(b))
		if !fn(name, attrs) {
			return
		}
		switch string(name) {
		case "script", "style", "textarea", "title", "xmp", "iframe", "noembed", "noframes":
			i = skipRawText(b, i, name)
		}
	}
}

// tagEnd finds the ">" that ends a tag, past quoted attribute values.
func tagEnd(b []byte, i int) int {
	var quote byte
	for ; i < len(b); i++ {
		c := b[i]
		switch {
		case quote != 0:
			if c == quote {
				quote = 0
			}
		case c == '"' || c == '\'':
			// Quotes open a value only after "=" (with optional spaces).
			k := i - 1
			for k >= 0 && isSpace(b[k]) {
				k--
			}
			if k >= 0 && b[k] == '=' {
				quote = c
			}
		case c == '>':
			return i
		}
	}
	return -1
}

// skipRawText moves past the contents of a raw-text element to its end tag.
func skipRawText(b []byte, i int, name []byte) int {
	for {
		j := bytes.Index(b[i:], []byte("</"))
		if j < 0 {
			return len(b)
		}
		k := i + j + 2
		if k+len(name) <= len(b) && bytes.EqualFold(b[k:k+len(name)], name) {
			return k - 2
		}
		i = k
	}
}

// parseAttrs reads attributes as the HTML tokenizer does: names lower-cased,
// values unquoted and unescaped; a repeated name keeps its first value.
func parseAttrs(b []byte, out []html.Attribute) []html.Attribute {
	i := 0
	for i < len(b) {
		for i < len(b) && (isSpace(b[i]) || b[i] == '/') {
			i++
		}
		start := i
		for i < len(b) && !isSpace(b[i]) && b[i] != '=' && b[i] != '>' && (b[i] != '/' || i == start) {
			i++
		}
		if i == start {
			break
		}
		key := strings.ToLower(string(b[start:i]))
		for i < len(b) && isSpace(b[i]) {
			i++
		}
		val := ""
		if i < len(b) && b[i] == '=' {
			i++
			for i < len(b) && isSpace(b[i]) {
				i++
			}
			if i < len(b) && (b[i] == '"' || b[i] == '\'') {
				q := b[i]
				i++
				vs := i
				for i < len(b) && b[i] != q {
					i++
				}
				val = string(b[vs:i])
				i++
			} else {
				vs := i
				for i < len(b) && !isSpace(b[i]) && b[i] != '>' {
					i++
				}
				val = string(b[vs:i])
			}
			if strings.IndexByte(val, '&') >= 0 {
				val = html.UnescapeString(val)
			}
		}
		dup := false
		for _, a := range out {
			if a.Key == key {
				dup = true
			}
		}
		if !dup {
			out = append(out, html.Attribute{Key: key, Val: val})
		}
	}
	return out
}

func isLetter(c byte) bool { return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' }
