package httpx

import (
	"fmt"
	"strconv"
	"strings"
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
	Close  bool // ask the server to close the connection (no keep-alive)
}

// UserAgent is sent unless the request sets its own.
var UserAgent = "loadlab"

// Append encodes r as an HTTP/1.1 request onto dst. Header names and values
// must have been checked with CheckHeader.
func (r *Request) Append(dst []byte) []byte {
	dst = append(dst, r.Method...)
	dst = append(dst, ' ')
	dst = append(dst, r.Target...)
	dst = append(dst, " HTTP/1.1\r\n"...)
	hasHost, hasAgent, hasLength := false, false, false
	for _, h := range r.Header {
		switch {
		case strings.EqualFold(h.Name, "Host"):
			hasHost = true
		case strings.EqualFold(h.Name, "User-Agent"):
			hasAgent = true
		case strings.EqualFold(h.Name, "Content-Length"):
			hasLength = true
		}
	}
	if !hasHost {
		dst = append(dst, "Host: "...)
		dst = append(dst, r.Host...)
		dst = append(dst, "\r\n"...)
	}
	if !hasAgent && UserAgent != "" {
		dst = append(dst, "User-Agent: "...)
		dst = append(dst, UserAgent...)
		dst = append(dst, "\r\n"...)
	}
	for _, h := range r.Header {
		dst = append(dst, h.Name...)
		dst = append(dst, ": "...)
		dst = append(dst, h.Value...)
		dst = append(dst, "\r\n"...)
	}
	if !hasLength && (len(r.Body) > 0 || bodyMethod(r.Method)) {
		dst = append(dst, "Content-Length: "...)
		dst = strconv.AppendInt(dst, int64(len(r.Body)), 10)
		dst = append(dst, "\r\n"...)
	}
	if r.Close {
		dst = append(dst, "Connection: close\r\n"...)
	}
	dst = append(dst, "\r\n"...)
	return append(dst, r.Body...)
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
	if strings.ContainsAny(value, "\r\n\x00") {
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
