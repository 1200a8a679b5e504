package failure

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"golang.org/x/net/html"
)

// Near finds the part of a (masked) body a reader of a failed check needs
// first, at most width bytes, and says which part it is:
//
//   - a contains check whose text the body holds (another check failed):
//     around it;
//   - a json check: the JSON path's neighbourhood, the value it found or
//     the nearest object or array on its way that exists;
//   - an HTML page: its first element whose class or id says flash, error,
//     alert or notice (a Rails flash: <div class="flash alert">Invalid user
//     or password</div>);
//   - a contains check: around the longest start of its text that the body
//     holds, half of it at least ("order-num" of "order-number");
//   - otherwise the start of the visible text, tags and the head left out
//     for HTML, not the <!DOCTYPE bytes.
func Near(body, contentType string, s Sought, width int) (text, where string) {
	isHTML := strings.Contains(strings.ToLower(contentType), "html") ||
		contentType == "" && strings.HasPrefix(strings.TrimSpace(body), "<")
	if s.Contains != "" {
		if i := strings.Index(body, s.Contains); i >= 0 {
			return around(body, i, len(s.Contains), width), fmt.Sprintf("around %q", s.Contains)
		}
	}
	if s.JSONPath != "" {
		if text, where, ok := nearJSON(body, s.JSONPath, width); ok {
			return text, where
		}
	}
	if isHTML {
		if el, ok := flash(body); ok {
			return oneLine(el, width), "the page's flash or error element"
		}
	}
	if s.Contains != "" {
		if text, where, ok := nearStart(body, s.Contains, width); ok {
			return text, where
		}
	}
	if isHTML {
		return oneLine(visibleText(body), width), "the start of the page's visible text"
	}
	return oneLine(body, width), "the start of the body"
}

// nearStart is the body around the longest start of needle that it holds,
// half of needle and four bytes at least: "order-num" of "order-number".
func nearStart(body, needle string, width int) (string, string, bool) {
	for n := len(needle) - 1; n >= 4 && 2*n >= len(needle); n-- {
		if i := strings.Index(body, needle[:n]); i >= 0 {
			return around(body, i, n, width), fmt.Sprintf("around %q, the longest start of %q the body holds", needle[:n], needle), true
		}
	}
	return "", "", false
}

// around is the text about the n bytes at i, width bytes in all, on one
// line, cut at character boundaries.
func around(body string, i, n, width int) string {
	pad := max(0, (width-n)/2)
	from, to := max(0, i-pad), min(len(body), i+n+pad)
	for from > 0 && from < len(body) && !isRuneStart(body[from]) {
		from--
	}
	for to < len(body) && !isRuneStart(body[to]) {
		to++
	}
	text := strings.Join(strings.Fields(body[from:to]), " ")
	if from > 0 {
		text = "…" + text
	}
	if to < len(body) {
		text += "…"
	}
	return text
}

func isRuneStart(b byte) bool { return b&0xC0 != 0x80 }

// oneLine is s with its white space collapsed, cut to width bytes.
func oneLine(s string, width int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > width {
		return clip(s, width) + "…"
	}
	return s
}

// flashWord is a class or id that marks a message for the user.
var flashWord = regexp.MustCompile(`(?i)flash|error|alert|notice`)

// flash finds the first element whose class or id says flash, error, alert
// or notice and which holds visible text, as HTML: its start tag, its
// text, its end tag.
func flash(body string) (string, bool) {
	z := html.NewTokenizer(strings.NewReader(body))
	for {
		switch z.Next() {
		case html.ErrorToken:
			return "", false
		case html.StartTagToken:
			tok := z.Token()
			if !marked(tok) {
				continue
			}
			text := elementText(z, tok.Data)
			if strings.TrimSpace(text) == "" {
				continue
			}
			return tok.String() + strings.Join(strings.Fields(text), " ") + "</" + tok.Data + ">", true
		}
	}
}

func marked(tok html.Token) bool {
	for _, a := range tok.Attr {
		if (a.Key == "class" || a.Key == "id") && flashWord.MatchString(a.Val) {
			return true
		}
	}
	return false
}

// elementText is the visible text up to the end of the element named tag,
// which z has just opened.
func elementText(z *html.Tokenizer, tag string) string {
	var b strings.Builder
	depth := 1
	for depth > 0 {
		switch z.Next() {
		case html.ErrorToken:
			return b.String()
		case html.StartTagToken:
			if name, _ := z.TagName(); string(name) == tag {
				depth++
			}
		case html.EndTagToken:
			if name, _ := z.TagName(); string(name) == tag {
				depth--
			}
		case html.TextToken:
			b.Write(z.Text())
			b.WriteByte(' ')
		}
	}
	return b.String()
}

// visibleText is an HTML page's text as a browser shows it: no tags, no
// head, scripts or styles.
func visibleText(body string) string {
	z := html.NewTokenizer(strings.NewReader(body))
	var b strings.Builder
	skip := 0
	for {
		switch z.Next() {
		case html.ErrorToken:
			return b.String()
		case html.StartTagToken:
			switch name, _ := z.TagName(); string(name) {
			case "head", "script", "style", "template", "noscript":
				skip++
			}
		case html.EndTagToken:
			switch name, _ := z.TagName(); string(name) {
			case "head", "script", "style", "template", "noscript":
				skip = max(0, skip-1)
			}
		case html.TextToken:
			if skip == 0 {
				b.Write(z.Text())
				b.WriteByte(' ')
			}
		}
	}
}

// pathPart reads one step of a simple JSONPath: .name, ['name'] or [2].
var pathPart = regexp.MustCompile(`^(?:\.([A-Za-z_$][\w$-]*)|\[\s*'([^']*)'\s*\]|\[\s*"([^"]*)"\s*\]|\[\s*(\d+)\s*\])`)

// nearJSON follows a simple JSONPath ($.a.b[2]) through the body: the value
// it reaches, or the last object or array on its way. False when the body
// is not JSON or the path is not that simple.
func nearJSON(body, path string, width int) (string, string, bool) {
	var doc any
	dec := json.NewDecoder(strings.NewReader(body))
	dec.UseNumber()
	if err := dec.Decode(&doc); err != nil {
		return "", "", false
	}
	rest := strings.TrimSpace(path)
	if !strings.HasPrefix(rest, "$") {
		return "", "", false
	}
	rest = rest[1:]
	node, at := doc, "$"
	for rest != "" {
		m := pathPart.FindStringSubmatch(rest)
		if m == nil {
			return "", "", false // a filter, a wildcard...: show the document
		}
		var next any
		found := false
		switch v := node.(type) {
		case map[string]any:
			key := m[1] + m[2] + m[3]
			if m[4] == "" {
				next, found = v[key]
			}
		case []any:
			if m[4] != "" {
				if i, err := strconv.Atoi(m[4]); err == nil && i < len(v) {
					next, found = v[i], true
				}
			}
		}
		if !found {
			return compact(node, width), fmt.Sprintf("the JSON at %s, which has no %s", at, m[0]), true
		}
		node, at, rest = next, at+m[0], rest[len(m[0]):]
	}
	return compact(node, width), fmt.Sprintf("the value at %s", at), true
}

func compact(v any, width int) string {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return ""
	}
	return oneLine(buf.String(), width)
}
