package httpx

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/loadlab/loadlab/internal/version"
)

// Header is one request header field.
type Header struct{ Name, Value string }

// Request describes a request to encode. Target is the request target as it
// goes on the request line: a path with an optional query ("/a?b=c").
type Request struct {
	Method string
	Target string
	Host   string
	Header []Header
	Body   []byte
	// BodyFile is a body sent from a file (Exchange.BodyFile) instead of
	// Body: AppendHead says its size.
	BodyFile *BodyFile
	Close    bool // ask the server to close the connection (no keep-alive)
	// AcceptEncoding, when set, is sent unless Header has its own.
	AcceptEncoding string
}

// UserAgent is sent unless the request sets its own: loadlab/VERSION, the
// version `loadlab version` prints.
func UserAgent() string { return userAgent }

// userAgent is set once, when the package is initialised, and never after.
var userAgent = "loadlab/" + version.String()

// Append encodes r as an HTTP/1.1 request onto dst, by RequestWriter's
// rules. Header names and values must have been checked with CheckHeader.
func (r *Request) Append(dst []byte) []byte {
	return append(r.AppendHead(dst), r.Body...)
}

// AppendHead is Append without the body: the request line and headers,
// Content-Length saying len(r.Body), and the blank line. A caller that
// already holds the body where the head can go before it (quick mode's
// --body-file) so sends a large body without copying it.
func (r *Request) AppendHead(dst []byte) []byte {
	w := RequestWriter{Close: r.Close, AcceptEncoding: r.AcceptEncoding}
	for _, h := range r.Header {
		w.Own(h.Name)
	}
	dst = w.AppendStart(dst, r.Method, []byte(r.Target), r.Host)
	for _, h := range r.Header {
		dst = AppendHeader(dst, h.Name, h.Value)
	}
	n := len(r.Body)
	if r.BodyFile != nil {
		n = int(r.BodyFile.Size)
	}
	return w.appendEndHead(dst, r.Method, n, n > 0)
}

// RequestWriter writes HTTP/1.1 requests by one set of rules, for quick
// mode's request and for every request of a plan's steps alike. It appends
// to the caller's buffer piece by piece, so that a plan writes header values
// and bodies straight from its templates, and it allocates nothing:
//
//	dst = w.AppendStart(dst, method, target, host) // request line, Host, User-Agent, Accept-Encoding
//	dst = httpx.AppendHeader(dst, name, value)     // or StartHeader, the value, EndHeader
//	dst = w.AppendEnd(dst, method, body, hasBody)  // Content-Type, Content-Length, Connection, body
//
// The rules: Host is the origin's unless the request has its own; so is
// User-Agent (UserAgent); so is Accept-Encoding, when AcceptEncoding is
// set; a request with a body, or whose method expects
// one (POST, PUT, PATCH), says its Content-Length unless it gives its own;
// ContentType goes with a body unless the request has a Content-Type; Close
// adds Connection: close. Header values never hold a line break or a NUL.
type RequestWriter struct {
	// What the request's own headers set, so that the writer does not set
	// it too (see Own).
	OwnHost, OwnUserAgent, OwnContentLength, OwnContentType, OwnAcceptEncoding bool
	// ContentType is sent with a body unless the request has its own.
	ContentType string
	// AcceptEncoding, when set, is sent unless the request has its own.
	AcceptEncoding string
	// Close asks the server to close the connection (no keep-alive).
	Close bool
}

// Own notes a header the request sets itself, so that the writer leaves
// out its own of that name.
func (w *RequestWriter) Own(name string) {
	switch {
	case strings.EqualFold(name, "Host"):
		w.OwnHost = true
	case strings.EqualFold(name, "User-Agent"):
		w.OwnUserAgent = true
	case strings.EqualFold(name, "Content-Length"):
		w.OwnContentLength = true
	case strings.EqualFold(name, "Content-Type"):
		w.OwnContentType = true
	case strings.EqualFold(name, "Accept-Encoding"):
		w.OwnAcceptEncoding = true
	}
}

// AppendStart appends the request line and the Host, User-Agent and
// Accept-Encoding headers.
// target is the request target as it goes on the request line: a path with
// an optional query ("/a?b=c").
func (w *RequestWriter) AppendStart(dst []byte, method string, target []byte, host string) []byte {
	dst = append(dst, method...)
	dst = append(dst, ' ')
	dst = append(dst, target...)
	dst = append(dst, " HTTP/1.1\r\n"...)
	if !w.OwnHost {
		dst = AppendHeader(dst, "Host", host)
	}
	if !w.OwnUserAgent {
		dst = AppendHeader(dst, "User-Agent", userAgent)
	}
	if !w.OwnAcceptEncoding && w.AcceptEncoding != "" {
		dst = AppendHeader(dst, "Accept-Encoding", w.AcceptEncoding)
	}
	return dst
}

// AppendHeader appends one header field whose name and value have been
// checked (CheckHeader).
func AppendHeader(dst []byte, name, value string) []byte {
	dst = StartHeader(dst, name)
	dst = append(dst, value...)
	return append(dst, "\r\n"...)
}

// StartHeader appends a header's name; the caller appends its value and
// calls EndHeader with the length dst had after StartHeader.
func StartHeader(dst []byte, name string) []byte {
	dst = append(dst, name...)
	return append(dst, ": "...)
}

// EndHeader checks the value appended since valueStart (CheckHeaderValue)
// and ends the field.
func EndHeader(dst []byte, valueStart int) ([]byte, error) {
	if err := checkValue(dst[valueStart:]); err != nil {
		return dst, err
	}
	return append(dst, "\r\n"...), nil
}

// Errors of a header value that cannot be sent.
var (
	ErrLineBreak = errors.New("the value has a line break")
	ErrNUL       = errors.New("the value has a NUL byte")
)

// CheckHeaderValue reports whether a header value can be sent: it is
// ErrLineBreak or ErrNUL when it cannot.
func CheckHeaderValue(v string) error { return checkValue(v) }

func checkValue[T string | []byte](v T) error {
	for i := range len(v) {
		switch v[i] {
		case '\r', '\n':
			return ErrLineBreak
		case 0:
			return ErrNUL
		}
	}
	return nil
}

// AppendEnd appends Content-Type, Content-Length and Connection as the
// rules ask, the blank line, and the body. hasBody says that the request
// has a body even when it is empty (a plan step's empty form).
func (w *RequestWriter) AppendEnd(dst []byte, method string, body []byte, hasBody bool) []byte {
	return append(w.appendEndHead(dst, method, len(body), hasBody), body...)
}

// AppendEndSized is AppendEnd for a body of n bytes sent after it
// (Exchange.BodyFile): the headers and the blank line, no body.
func (w *RequestWriter) AppendEndSized(dst []byte, method string, n int64) []byte {
	return w.appendEndHead(dst, method, int(n), true)
}

// appendEndHead is AppendEnd without the body, of n bytes.
func (w *RequestWriter) appendEndHead(dst []byte, method string, n int, hasBody bool) []byte {
	hasBody = hasBody || n > 0
	if hasBody && w.ContentType != "" && !w.OwnContentType {
		dst = AppendHeader(dst, "Content-Type", w.ContentType)
	}
	if !w.OwnContentLength && (hasBody || bodyMethod(method)) {
		dst = StartHeader(dst, "Content-Length")
		dst = strconv.AppendInt(dst, int64(n), 10)
		dst = append(dst, "\r\n"...)
	}
	if w.Close {
		dst = append(dst, "Connection: close\r\n"...)
	}
	return append(dst, "\r\n"...)
}

// bodyMethod reports whether a request with this method is expected to carry
// a body, so that an empty one must be announced with Content-Length: 0.
func bodyMethod(m string) bool { return m == "POST" || m == "PUT" || m == "PATCH" }

// Idempotent reports whether a request with this method may be sent twice.
func Idempotent(method string) bool {
	switch method {
	case "GET", "HEAD", "OPTIONS", "TRACE", "PUT", "DELETE":
		return true
	}
	return false
}

// CheckMethod reports whether m is a valid HTTP method token.
func CheckMethod(m string) error {
	if m == "" {
		return fmt.Errorf("empty method")
	}
	if !isToken(m) {
		return fmt.Errorf("bad method %q", m)
	}
	return nil
}

// CheckHeader reports whether a header field can be sent as it is.
func CheckHeader(name, value string) error {
	if name == "" || !isToken(name) {
		return fmt.Errorf("bad header name %q", name)
	}
	if checkValue(value) != nil {
		return fmt.Errorf("header %s: value contains a line break or NUL", name)
	}
	return nil
}

func isToken(s string) bool {
	for i := range len(s) {
		c := s[i]
		if c <= ' ' || c >= 0x7f || strings.IndexByte(`()<>@,;:\"/[]?={}`, c) >= 0 {
			return false
		}
	}
	return true
}
