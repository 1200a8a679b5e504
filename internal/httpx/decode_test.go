package httpx

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/andybalholm/brotli"
	"github.com/klauspost/compress/flate"
	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zlib"
	"github.com/klauspost/compress/zstd"
)

func encode(t testing.TB, coding string, data []byte) []byte {
	var b bytes.Buffer
	var w interface {
		Write([]byte) (int, error)
		Close() error
	}
	switch coding {
	case "gzip":
		w = gzip.NewWriter(&b)
	case "deflate":
		w = zlib.NewWriter(&b)
	case "rawdeflate":
		w, _ = flate.NewWriter(&b, 5)
	case "br":
		w = brotli.NewWriter(&b)
	case "zstd":
		z, err := zstd.NewWriter(&b)
		if err != nil {
			t.Fatal(err)
		}
		w = z
	}
	if _, err := w.Write(data); err != nil {
		t.Fatal(err)
	}
	w.Close()
	return b.Bytes()
}

func codings(s ...string) [][]byte {
	var out [][]byte
	for _, c := range s {
		out = append(out, []byte(c))
	}
	return out
}

func TestDecode(t *testing.T) {
	page := []byte(strings.Repeat(`<div class="flash alert">Invalid user or password</div>`, 200))
	var d decoders
	for _, c := range []string{"gzip", "deflate", "br", "zstd"} {
		for range 2 { // the second time on the reset decoder
			got, err := d.decode(nil, encode(t, c, page), codings(c), 1<<20)
			if err != nil || !bytes.Equal(got, page) {
				t.Fatalf("%s: %d bytes, %v", c, len(got), err)
			}
		}
	}
	// Raw deflate, which some servers send for "deflate".
	if got, err := d.decode(nil, encode(t, "rawdeflate", page), codings("DEFLATE"), 1<<20); err != nil || !bytes.Equal(got, page) {
		t.Errorf("raw deflate: %d bytes, %v", len(got), err)
	}
	// Two codings, applied gzip then br: undone br then gzip.
	two := encode(t, "br", encode(t, "gzip", page))
	if got, err := d.decode(nil, two, codings("gzip", "br"), 1<<20); err != nil || !bytes.Equal(got, page) {
		t.Errorf("gzip, br: %d bytes, %v", len(got), err)
	}
}

// TestDecodeBomb: 64 MiB of zeros in 64 KiB of gzip end as ErrTooLarge at
// the limit, without allocating the 64 MiB.
func TestDecodeBomb(t *testing.T) {
	bomb := encode(t, "gzip", make([]byte, 64<<20))
	var d decoders
	got, err := d.decode(make([]byte, 0, 16), bomb, codings("gzip"), 1<<20)
	if !errors.Is(err, ErrTooLarge) || len(got) != 0 || cap(got) > 4<<20 {
		t.Fatalf("bomb: %d bytes (cap %d), %v", len(got), cap(got), err)
	}
	if !strings.Contains(err.Error(), "decoded body over the 1048576 byte limit") {
		t.Errorf("message: %v", err)
	}
}

func TestDecodeBad(t *testing.T) {
	var d decoders
	for _, c := range []struct{ coding, body, want string }{
		{"gzip", "not gzip at all", "gzip body"},
		{"br", "\xff\xff\xff\xff not brotli", "br body"},
		{"zstd", "not zstd", "zstd body"},
		{"compress", "x", `unsupported content coding "compress"`},
	} {
		if _, err := d.decode(nil, []byte(c.body), codings(c.coding), 1<<20); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.coding, err, c.want)
		}
	}
}

// TestParserCodings: Content-Encoding and transfer codings are listed in
// the order applied; chunked not last means the body ends at the close.
func TestParserCodings(t *testing.T) {
	for _, c := range []struct {
		head    string
		codings string
		chunked bool
		close   bool
	}{
		{"Content-Encoding: gzip\r\nContent-Length: 3\r\n", "gzip", false, false},
		{"Content-Encoding: identity\r\nContent-Length: 3\r\n", "", false, false},
		{"content-encoding: gzip, br\r\nContent-Length: 3\r\n", "gzip,br", false, false},
		{"Content-Encoding: gzip\r\nContent-Encoding: zstd\r\nContent-Length: 3\r\n", "gzip,zstd", false, false},
		{"Transfer-Encoding: gzip, chunked\r\n", "gzip", true, false},
		{"Content-Encoding: br\r\nTransfer-Encoding: gzip, chunked\r\n", "br,gzip", true, false},
		{"Transfer-Encoding: chunked, gzip\r\n", "gzip", false, true},
		{"Transfer-Encoding: Chunked\r\n", "", true, false},
	} {
		var p Parser
		p.Reset(false, true)
		if _, err := p.Feed([]byte("HTTP/1.1 200 OK\r\n" + c.head + "\r\n")); err != nil {
			t.Fatalf("%q: %v", c.head, err)
		}
		var got []string
		for _, x := range p.Codings() {
			got = append(got, string(x))
		}
		if strings.Join(got, ",") != c.codings || p.Chunked != c.chunked || p.Close != c.close {
			t.Errorf("%q: codings %v chunked %v close %v; want %s %v %v", c.head, got, p.Chunked, p.Close, c.codings, c.chunked, c.close)
		}
	}
}

// TestLoopTransferCodings: a body in "Transfer-Encoding: gzip, chunked" is
// unchunked and decoded; one in "chunked, gzip" (chunked not last) is read
// until the server closes (RFC 9112 §6.3) and decoded, not counted as a
// reset. Both engines.
func TestLoopTransferCodings(t *testing.T) {
	page := bytes.Repeat([]byte("<p>a page</p>"), 500)
	gz := encode(t, "gzip", page)
	var chunked bytes.Buffer
	for rest := gz; len(rest) > 0; {
		n := min(len(rest), 1000)
		fmt.Fprintf(&chunked, "%x\r\n%s\r\n", n, rest[:n])
		rest = rest[n:]
	}
	chunked.WriteString("0\r\n\r\n")
	answers := map[string]string{
		"gzip, chunked": "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n" + chunked.String(),
		"chunked, gzip": "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked, gzip\r\n\r\n" + string(gz),
	}
	forEachEngine(t, func(t *testing.T, engine Engine) {
		l := startLoop(t, Options{Timeout: 5 * time.Second, Engine: engine})
		for name, answer := range answers {
			t.Run(name, func(t *testing.T) {
				tg := target(t, serveOnce(t, func(c *net.TCPConn) { io.WriteString(c, answer) }))
				x := do(t, l, l.NewConn(tg), get(tg, "/", true))
				if x.Err != nil || x.Status != 200 || !x.Decoded || !bytes.Equal(x.Body, page) || x.BodyBytes != int64(len(gz)) {
					t.Errorf("%v %d decoded %v: %d bytes (%d on the wire), want the %d-byte page from %d", x.Err, x.Status, x.Decoded, len(x.Body), x.BodyBytes, len(page), len(gz))
				}
			})
		}
	})
}
