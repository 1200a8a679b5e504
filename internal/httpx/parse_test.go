package httpx

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
)

// feed parses raw in pieces of size step (0: all at once), then signals EOF if
// the response is not complete.
func feed(p *Parser, raw []byte, step int) (consumed int, err error) {
	if step <= 0 {
		step = len(raw) + 1
	}
	for i := 0; i < len(raw) && !p.Done(); i += step {
		end := min(i+step, len(raw))
		n, err := p.Feed(raw[i:end])
		consumed += n
		if err != nil {
			return consumed, err
		}
	}
	if !p.Done() {
		return consumed, p.EOF()
	}
	return consumed, nil
}

func TestParser(t *testing.T) {
	tests := []struct {
		name    string
		raw     string
		head    bool
		status  int
		body    string
		close   bool
		extra   int // bytes left after the response
		wantErr string
	}{
		{name: "content length", raw: "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello", status: 200, body: "hello"},
		{name: "lower-case headers", raw: "HTTP/1.1 201 Created\r\ncontent-length: 2\r\nconnection: Close\r\n\r\nok", status: 201, body: "ok", close: true},
		{name: "no reason phrase", raw: "HTTP/1.1 204\r\n\r\n", status: 204},
		{name: "chunked", raw: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n6;ext=1\r\n world\r\n0\r\nX-Trailer: y\r\n\r\n", status: 200, body: "hello world"},
		{name: "chunked wins over length", raw: "HTTP/1.1 200 OK\r\nContent-Length: 100\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nhi\r\n0\r\n\r\n", status: 200, body: "hi"},
		{name: "close delimited", raw: "HTTP/1.1 200 OK\r\n\r\nuntil the end", status: 200, body: "until the end", close: true},
		{name: "http 1.0 closes", raw: "HTTP/1.0 200 OK\r\nContent-Length: 1\r\n\r\nx", status: 200, body: "x", close: true},
		{name: "http 1.0 keep-alive", raw: "HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 1\r\n\r\nx", status: 200, body: "x"},
		{name: "head ignores length", raw: "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n", head: true, status: 200},
		{name: "304 has no body", raw: "HTTP/1.1 304 Not Modified\r\nContent-Length: 100\r\n\r\n", status: 304},
		{name: "interim 100 continue", raw: "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", status: 200, body: "ok"},
		{name: "bare LF lines", raw: "HTTP/1.1 200 OK\nContent-Length: 2\n\nok", status: 200, body: "ok"},
		{name: "extra bytes after response", raw: "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nokGARBAGE", status: 200, body: "ok", extra: 7},
		{name: "garbage", raw: "SSH-2.0-OpenSSH_9.2\r\n", wantErr: "malformed response"},
		{name: "bad status code", raw: "HTTP/1.1 2x0 OK\r\n\r\n", wantErr: "bad status code"},
		{name: "bad content length", raw: "HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n", wantErr: "bad Content-Length"},
		{name: "conflicting content length", raw: "HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n", wantErr: "conflicting"},
		{name: "bad chunk size", raw: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", wantErr: "bad chunk size"},
		{name: "chunk longer than size", raw: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nab\r\n", wantErr: "chunk data longer"},
		{name: "eof before response", raw: "", wantErr: "before any response"},
		{name: "eof in headers", raw: "HTTP/1.1 200 OK\r\nContent-Le", wantErr: "in the middle"},
		{name: "eof in body", raw: "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc", wantErr: "in the middle"},
		{name: "header too large", raw: "HTTP/1.1 200 OK\r\nX-Big: " + strings.Repeat("a", 200) + "\r\n\r\n", wantErr: "header block over 100 bytes"},
		{name: "body too large", raw: "HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n", wantErr: "Content-Length 1000 over"},
		{name: "close-delimited body too large", raw: "HTTP/1.1 200 OK\r\n\r\n" + strings.Repeat("b", 600), wantErr: "body over the 500 byte limit"},
		{name: "chunked body too large", raw: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1f4\r\n" + strings.Repeat("c", 500) + "\r\n1\r\n", wantErr: "chunked body over"},
	}
	for _, tt := range tests {
		for _, step := range []int{0, 1, 3, 7} {
			t.Run(tt.name, func(t *testing.T) {
				p := &Parser{MaxHeaderBytes: 100, MaxBodyBytes: 500}
				if !strings.Contains(tt.name, "too large") {
					p.MaxHeaderBytes, p.MaxBodyBytes = 0, 0
				}
				p.Reset(tt.head, true)
				n, err := feed(p, []byte(tt.raw), step)
				if tt.wantErr != "" {
					if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
						t.Fatalf("step %d: err = %v, want %q", step, err, tt.wantErr)
					}
					return
				}
				if err != nil {
					t.Fatalf("step %d: %v", step, err)
				}
				if p.Status != tt.status || string(p.Body) != tt.body || p.Close != tt.close {
					t.Errorf("step %d: status %d body %q close %v, want %d %q %v", step, p.Status, p.Body, p.Close, tt.status, tt.body, tt.close)
				}
				if p.BodyBytes != int64(len(tt.body)) {
					t.Errorf("step %d: BodyBytes = %d, want %d", step, p.BodyBytes, len(tt.body))
				}
				if step == 0 && len(tt.raw)-n != tt.extra {
					t.Errorf("left %d bytes, want %d", len(tt.raw)-n, tt.extra)
				}
			})
		}
	}
}

func TestParserTooLargeIsTyped(t *testing.T) {
	p := &Parser{MaxBodyBytes: 10}
	p.Reset(false, false)
	_, err := feed(p, []byte("HTTP/1.1 200 OK\r\nContent-Length: 11\r\n\r\n"), 0)
	if !errors.Is(err, ErrTooLarge) {
		t.Fatalf("err = %v, want ErrTooLarge", err)
	}
}

func TestParserDiscardsBody(t *testing.T) {
	p := &Parser{}
	p.Reset(false, false)
	if _, err := feed(p, []byte("HTTP/1.1 200 OK\r\nContent-Length: 5\r\nX: y\r\n\r\nhello"), 0); err != nil {
		t.Fatal(err)
	}
	if len(p.Body) != 0 || len(p.Header) != 0 || p.BodyBytes != 5 {
		t.Fatalf("discarding parser kept %q %q, counted %d", p.Header, p.Body, p.BodyBytes)
	}
}

func TestParserDoesNotAllocate(t *testing.T) {
	raw := []byte("HTTP/1.1 200 OK\r\nServer: nginx\r\nContent-Type: text/plain\r\nContent-Length: 100\r\nConnection: keep-alive\r\n\r\n" + strings.Repeat("x", 100))
	p := &Parser{}
	allocs := testing.AllocsPerRun(100, func() {
		p.Reset(false, false)
		if _, err := p.Feed(raw); err != nil || !p.Done() {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per response, want 0", allocs)
	}
}

// FuzzParser checks that the parser never panics, that how the input is split
// does not change the outcome, and that where net/http accepts a response the
// parser agrees on status and body.
func FuzzParser(f *testing.F) {
	f.Add([]byte("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello"), uint8(3))
	f.Add([]byte("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n"), uint8(1))
	f.Add([]byte("HTTP/1.0 404 Not Found\r\n\r\nbody"), uint8(2))
	f.Fuzz(func(t *testing.T, raw []byte, step uint8) {
		whole := &Parser{}
		whole.Reset(false, true)
		_, errWhole := feed(whole, raw, 0)
		split := &Parser{}
		split.Reset(false, true)
		_, errSplit := feed(split, raw, int(step%16)+1)
		if (errWhole == nil) != (errSplit == nil) {
			t.Fatalf("whole err %v, split err %v", errWhole, errSplit)
		}
		if errWhole != nil {
			return
		}
		if whole.Status != split.Status || !bytes.Equal(whole.Body, split.Body) {
			t.Fatalf("whole %d %q, split %d %q", whole.Status, whole.Body, split.Status, split.Body)
		}
		resp, err := http.ReadResponse(bufio.NewReader(bytes.NewReader(raw)), nil)
		if err != nil {
			return
		}
		body, err := io.ReadAll(resp.Body)
		if err != nil || resp.StatusCode < 200 {
			return
		}
		if resp.StatusCode != whole.Status {
			t.Fatalf("status %d, net/http says %d", whole.Status, resp.StatusCode)
		}
		if len(resp.TransferEncoding) == 0 && resp.ContentLength >= 0 && !bytes.Equal(body, whole.Body) {
			t.Fatalf("body %q, net/http says %q", whole.Body, body)
		}
	})
}

// TestParserReason: the reason phrase is the server's, whole up to 64 bytes,
// and the final response's after a 100 Continue.
func TestParserReason(t *testing.T) {
	for raw, want := range map[string]string{
		"HTTP/1.1 413 Payload Too Large\r\nContent-Length: 0\r\n\r\n":                    "Payload Too Large",
		"HTTP/1.1 404\r\nContent-Length: 0\r\n\r\n":                                      "",
		"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 201 Made It\r\nContent-Length: 0\r\n\r\n": "Made It",
		"HTTP/1.1 500 " + strings.Repeat("x", 100) + "\r\nContent-Length: 0\r\n\r\n":     strings.Repeat("x", 64),
	} {
		var p Parser
		p.Reset(false, false)
		if _, err := p.Feed([]byte(raw)); err != nil || !p.Done() {
			t.Fatalf("%q: %v done %v", raw, err, p.Done())
		}
		if got := string(p.Reason()); got != want {
			t.Errorf("%q: reason %q, want %q", raw, got, want)
		}
	}
}
