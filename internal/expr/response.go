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

// Equal compares a response value with an expected one by their text, so
// that 3, 3.0 and "3" agree.
func Equal(got, want any) bool {
	return format(got) == format(want)
}
