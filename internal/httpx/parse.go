package httpx

import (
	"bytes"
	"errors"
	"fmt"
)

// ErrTooLarge wraps the errors for a response whose header block or body exceeds
// the configured limits.
var ErrTooLarge = errors.New("response too large")

// ProtocolError is a response that is not valid HTTP/1.x.
type ProtocolError struct{ Msg string }

func (e *ProtocolError) Error() string { return "malformed response: " + e.Msg }

func protoErr(format string, args ...any) error {
	return &ProtocolError{Msg: fmt.Sprintf(format, args...)}
}

// parser states
const (
	stStatus = iota
	stHeader
	stBodyLength
	stBodyClose
	stChunkSize
	stChunkData
	stChunkDataEnd
	stTrailer
	stDone
)

// Parser reads one HTTP/1.x response from bytes fed to it in pieces of any size,
// as they arrive from a non-blocking socket. It never reads ahead of the response
// it parses and never allocates in the common case of a header block that arrives
// in one piece and a body that is discarded.
//
// A Parser is reused: Reset it before each response.
type Parser struct {
	// Limits. Zero means the defaults DefaultMaxHeaderBytes and DefaultMaxBodyBytes.
	MaxHeaderBytes int
	MaxBodyBytes   int64

	// keep: copy the header block and the body for the caller to inspect.
	keep bool
	// head: the request was HEAD, so the response has no body whatever it says.
	head bool

	state       int
	Status      int
	Minor       int   // HTTP/1.x minor version
	Length      int64 // Content-Length, -1 when absent
	Chunked     bool
	Close       bool // the server will close the connection after this response
	keepAlive   bool // HTTP/1.0 with Connection: keep-alive
	headerBytes int
	BodyBytes   int64 // body bytes received (decoded from chunks)
	remaining   int64 // of the current fixed-length body or chunk
	sawLength   bool

	line   []byte // a line split across pieces
	Header []byte // raw header lines (after the status line), when kept
	Body   []byte // body, when kept

	// The body's codings: Content-Encoding's values, then the transfer
	// codings before chunked, as received; codings lists them (identity
	// left out) in the order they were applied, once the header is done.
	ce, te  []byte
	teSeen  bool
	codings [][]byte

	// The status line's reason phrase ("Payload Too Large"), its first
	// maxReason bytes, kept without an allocation.
	reason    [maxReason]byte
	reasonLen uint8
}

// maxReason bounds the reason phrase kept.
const maxReason = 64

// Reason is the status line's reason phrase, as the server wrote it (its
// first 64 bytes); valid until the next Reset.
func (p *Parser) Reason() []byte { return p.reason[:p.reasonLen] }

// Codings are the codings of the response's body in the order the server
// applied them (decode them in reverse), identity left out; valid until the
// next Reset.
func (p *Parser) Codings() [][]byte { return p.codings }

// Defaults for the parser limits.
const (
	DefaultMaxHeaderBytes = 64 << 10
	DefaultMaxBodyBytes   = 16 << 20
)

// Reset prepares the parser for a new response. head says the request was HEAD;
// keep says the caller wants the header block and body.
func (p *Parser) Reset(head, keep bool) {
	p.head, p.keep = head, keep
	p.state = stStatus
	p.Status, p.Minor, p.reasonLen = 0, 1, 0
	p.Length = -1
	p.Chunked, p.Close, p.keepAlive, p.sawLength = false, false, false, false
	p.headerBytes = 0
	p.BodyBytes, p.remaining = 0, 0
	p.ce, p.te, p.teSeen, p.codings = p.ce[:0], p.te[:0], false, p.codings[:0]
	p.line = p.line[:0]
	if p.Header != nil {
		p.Header = p.Header[:0]
	}
	if p.Body != nil {
		p.Body = p.Body[:0]
	}
}

// Done reports whether a whole response has been parsed.
func (p *Parser) Done() bool { return p.state == stDone }

// Started reports whether any byte of the response has been seen.
func (p *Parser) Started() bool { return p.state != stStatus || len(p.line) > 0 }

func (p *Parser) maxHeader() int {
	if p.MaxHeaderBytes > 0 {
		return p.MaxHeaderBytes
	}
	return DefaultMaxHeaderBytes
}

func (p *Parser) maxBody() int64 {
	if p.MaxBodyBytes > 0 {
		return p.MaxBodyBytes
	}
	return DefaultMaxBodyBytes
}

// Feed parses the bytes in b. It returns how many it consumed; fewer than len(b)
// only when the response ended inside b (the rest belongs to nobody: a server
// that sends more than one response per request is broken).
func (p *Parser) Feed(b []byte) (int, error) {
	n := 0
	for n < len(b) && p.state != stDone {
		var k int
		var err error
		switch p.state {
		case stStatus, stHeader, stChunkSize, stTrailer, stChunkDataEnd:
			k, err = p.feedLine(b[n:])
		case stBodyLength, stChunkData:
			k, err = p.feedFixed(b[n:])
		case stBodyClose:
			k, err = p.feedBody(b[n:])
		}
		n += k
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

// EOF tells the parser that the server closed the connection. It completes a
// body delimited by the close and reports an error for any other state.
func (p *Parser) EOF() error {
	switch p.state {
	case stDone:
		return nil
	case stBodyClose:
		p.state = stDone
		return nil
	case stStatus:
		if len(p.line) == 0 {
			return errEOFBeforeResponse
		}
	}
	return errEOFInResponse
}

var (
	errEOFBeforeResponse = errors.New("connection closed before any response")
	errEOFInResponse     = errors.New("connection closed in the middle of the response")
)

// feedLine consumes bytes up to and including the next LF and handles the line.
func (p *Parser) feedLine(b []byte) (int, error) {
	i := bytes.IndexByte(b, '\n')
	limit := p.maxHeader()
	if i < 0 {
		if err := p.countHeader(len(b), limit); err != nil {
			return 0, err
		}
		p.line = append(p.line, b...)
		return len(b), nil
	}
	if err := p.countHeader(i+1, limit); err != nil {
		return 0, err
	}
	line := b[:i]
	if len(p.line) > 0 {
		p.line = append(p.line, line...)
		line = p.line
	}
	if n := len(line); n > 0 && line[n-1] == '\r' {
		line = line[:n-1]
	}
	err := p.handleLine(line)
	p.line = p.line[:0]
	return i + 1, err
}

// countHeader bounds the status line, headers and trailers as a whole, and each
// chunk-size line on its own (a long chunked body has many of those).
func (p *Parser) countHeader(n, limit int) error {
	if p.state == stChunkSize || p.state == stChunkDataEnd {
		if len(p.line)+n > maxChunkLine {
			return protoErr("chunk size line over %d bytes", maxChunkLine)
		}
		return nil
	}
	p.headerBytes += n
	if p.headerBytes > limit {
		return fmt.Errorf("%w: header block over %d bytes", ErrTooLarge, limit)
	}
	return nil
}

const maxChunkLine = 4096

func (p *Parser) handleLine(line []byte) error {
	switch p.state {
	case stStatus:
		return p.statusLine(line)
	case stHeader:
		if len(line) == 0 {
			return p.endHeaders()
		}
		return p.headerLine(line)
	case stChunkSize:
		return p.chunkSize(line)
	case stChunkDataEnd:
		if len(line) != 0 {
			return protoErr("chunk data longer than its size")
		}
		p.state = stChunkSize
		return nil
	case stTrailer:
		if len(line) == 0 {
			p.state = stDone
		}
		return nil
	}
	return nil
}

func (p *Parser) statusLine(line []byte) error {
	// HTTP/1.1 200 OK
	if len(line) < 12 || string(line[:7]) != "HTTP/1." || line[8] != ' ' {
		return protoErr("bad status line %q", clip(line))
	}
	if line[7] < '0' || line[7] > '9' {
		return protoErr("bad HTTP version in %q", clip(line))
	}
	p.Minor = int(line[7] - '0')
	code := 0
	for _, c := range line[9:12] {
		if c < '0' || c > '9' {
			return protoErr("bad status code in %q", clip(line))
		}
		code = code*10 + int(c-'0')
	}
	if len(line) > 12 && line[12] != ' ' {
		return protoErr("bad status code in %q", clip(line))
	}
	if code < 100 {
		return protoErr("bad status code in %q", clip(line))
	}
	p.Status = code
	p.reasonLen = 0
	if len(line) > 13 {
		p.reasonLen = uint8(copy(p.reason[:], bytes.TrimSpace(line[13:])))
	}
	p.state = stHeader
	return nil
}

func (p *Parser) headerLine(line []byte) error {
	if p.keep {
		p.Header = append(p.Header, line...)
		p.Header = append(p.Header, '\r', '\n')
	}
	colon := bytes.IndexByte(line, ':')
	if colon <= 0 {
		if line[0] == ' ' || line[0] == '\t' {
			return nil // obsolete line folding: a continuation of a header we do not interpret
		}
		return protoErr("header line without a colon: %q", clip(line))
	}
	name := line[:colon]
	// Only a few headers decide the framing; skip the rest cheaply.
	switch len(name) {
	case 10: // connection
		if equalFold(name, "connection") {
			v := trim(line[colon+1:])
			if containsToken(v, "close") {
				p.Close = true
			}
			if containsToken(v, "keep-alive") {
				p.keepAlive = true
			}
		}
	case 14: // content-length
		if equalFold(name, "content-length") {
			n, ok := parseDecimal(trim(line[colon+1:]))
			if !ok {
				return protoErr("bad Content-Length %q", clip(line))
			}
			if p.sawLength && n != p.Length {
				return protoErr("conflicting Content-Length headers")
			}
			p.sawLength, p.Length = true, n
		}
	case 16: // content-encoding
		if equalFold(name, "content-encoding") {
			p.ce = appendList(p.ce, trim(line[colon+1:]))
		}
	case 17: // transfer-encoding
		if equalFold(name, "transfer-encoding") {
			p.teSeen = true
			p.te = appendList(p.te, trim(line[colon+1:]))
		}
	}
	return nil
}

// appendList adds a header's comma-separated values to list.
func appendList(list, v []byte) []byte {
	if len(v) == 0 {
		return list
	}
	if len(list) > 0 {
		list = append(list, ',')
	}
	return append(list, v...)
}

// framing reads the transfer codings: chunked last means chunked framing
// (RFC 9112 §6.3: chunked anywhere else means the body ends at the close),
// and any other coding (gzip, chunked) is the body's to decode. It lists
// the codings in the order they were applied.
func (p *Parser) framing() {
	p.codings = p.codings[:0]
	add := func(list []byte, transfer bool) {
		for len(list) > 0 {
			tok := list
			if i := bytes.IndexByte(list, ','); i >= 0 {
				tok, list = list[:i], list[i+1:]
			} else {
				list = nil
			}
			tok = trim(tok)
			if len(tok) == 0 || equalFold(tok, "identity") || transfer && equalFold(tok, "chunked") {
				continue
			}
			p.codings = append(p.codings, tok)
		}
	}
	add(p.ce, false)
	if !p.teSeen {
		return
	}
	add(p.te, true)
	last := p.te
	if i := bytes.LastIndexByte(last, ','); i >= 0 {
		last = last[i+1:]
	}
	p.Chunked = equalFold(trim(last), "chunked")
	if !p.Chunked {
		p.sawLength = false // a body ended by the close, whatever Content-Length says
	}
}

func (p *Parser) endHeaders() error {
	if p.Status < 200 {
		// An interim response (100 Continue, 103 Early Hints): the real one follows.
		p.state = stStatus
		p.Header = p.Header[:0]
		p.sawLength, p.Length, p.Chunked, p.Close, p.keepAlive = false, -1, false, false, false
		p.ce, p.te, p.teSeen = p.ce[:0], p.te[:0], false
		return nil
	}
	if p.Minor == 0 && !p.keepAlive {
		p.Close = true
	}
	p.framing()
	switch {
	case p.head || p.Status == 204 || p.Status == 304:
		p.state = stDone
	case p.Chunked:
		p.state = stChunkSize
	case p.sawLength:
		if p.Length > p.maxBody() {
			return fmt.Errorf("%w: Content-Length %d over the %d byte limit", ErrTooLarge, p.Length, p.maxBody())
		}
		p.remaining = p.Length
		p.state = stBodyLength
		if p.Length == 0 {
			p.state = stDone
		}
	default:
		p.Close = true
		p.state = stBodyClose
	}
	return nil
}

func (p *Parser) chunkSize(line []byte) error {
	if i := bytes.IndexByte(line, ';'); i >= 0 {
		line = line[:i]
	}
	line = trim(line)
	if len(line) == 0 || len(line) > 15 {
		return protoErr("bad chunk size %q", clip(line))
	}
	var n int64
	for _, c := range line {
		var d byte
		switch {
		case c >= '0' && c <= '9':
			d = c - '0'
		case c >= 'a' && c <= 'f':
			d = c - 'a' + 10
		case c >= 'A' && c <= 'F':
			d = c - 'A' + 10
		default:
			return protoErr("bad chunk size %q", clip(line))
		}
		n = n<<4 | int64(d)
	}
	if n == 0 {
		p.state = stTrailer
		return nil
	}
	if p.BodyBytes+n > p.maxBody() {
		return fmt.Errorf("%w: chunked body over the %d byte limit", ErrTooLarge, p.maxBody())
	}
	p.remaining = n
	p.state = stChunkData
	return nil
}

// feedFixed consumes up to p.remaining bytes of a sized body or chunk.
func (p *Parser) feedFixed(b []byte) (int, error) {
	n := int64(len(b))
	if n > p.remaining {
		n = p.remaining
	}
	p.take(b[:n])
	p.remaining -= n
	if p.remaining == 0 {
		if p.state == stChunkData {
			p.state = stChunkDataEnd
		} else {
			p.state = stDone
		}
	}
	return int(n), nil
}

// feedBody consumes a body that ends when the server closes the connection.
func (p *Parser) feedBody(b []byte) (int, error) {
	if p.BodyBytes+int64(len(b)) > p.maxBody() {
		return 0, fmt.Errorf("%w: body over the %d byte limit", ErrTooLarge, p.maxBody())
	}
	p.take(b)
	return len(b), nil
}

func (p *Parser) take(b []byte) {
	p.BodyBytes += int64(len(b))
	if p.keep {
		p.Body = append(p.Body, b...)
	}
}

func clip(b []byte) []byte {
	if len(b) > 60 {
		return b[:60]
	}
	return b
}

func trim(b []byte) []byte {
	for len(b) > 0 && (b[0] == ' ' || b[0] == '\t') {
		b = b[1:]
	}
	for len(b) > 0 && (b[len(b)-1] == ' ' || b[len(b)-1] == '\t') {
		b = b[:len(b)-1]
	}
	return b
}

// equalFold compares an ASCII header name with a lower-case constant.
func equalFold(b []byte, lower string) bool {
	if len(b) != len(lower) {
		return false
	}
	for i := range len(b) {
		c := b[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != lower[i] {
			return false
		}
	}
	return true
}

// containsToken reports whether a comma-separated header value holds token.
func containsToken(v []byte, token string) bool {
	for len(v) > 0 {
		i := bytes.IndexByte(v, ',')
		var part []byte
		if i < 0 {
			part, v = v, nil
		} else {
			part, v = v[:i], v[i+1:]
		}
		if equalFold(trim(part), token) {
			return true
		}
	}
	return false
}

func parseDecimal(b []byte) (int64, bool) {
	if len(b) == 0 || len(b) > 18 {
		return 0, false
	}
	var n int64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	return n, true
}
