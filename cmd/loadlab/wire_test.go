package main

import (
	"bufio"
	"bytes"
	"context"
	"flag"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/loadlab/loadlab/internal/httpx"
)

var updateWire = flag.Bool("update-wire", false, "rewrite testdata/wire-*.golden")

// wireRecorder is a raw TCP server that keeps the bytes of the first request
// it gets and answers every request with 200 ok.
type wireRecorder struct {
	ln    net.Listener
	mu    sync.Mutex
	first []byte
}

func newWireRecorder(t *testing.T) *wireRecorder {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	w := &wireRecorder{ln: ln}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go w.serve(c)
		}
	}()
	return w
}

func (w *wireRecorder) serve(c net.Conn) {
	defer c.Close()
	r := bufio.NewReader(c)
	for {
		var raw bytes.Buffer
		req, err := http.ReadRequest(bufio.NewReader(io.TeeReader(r, &raw)))
		if err != nil {
			return // the preflight's connection, or the end
		}
		n, _ := strconv.Atoi(req.Header.Get("Content-Length"))
		if n > 0 {
			io.CopyN(io.Discard, req.Body, int64(n))
		}
		w.mu.Lock()
		if w.first == nil {
			w.first = append([]byte(nil), raw.Bytes()...)
		}
		w.mu.Unlock()
		if _, err := io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"); err != nil || req.Close {
			return
		}
	}
}

// TestQuickWireGolden: quick mode's request as it arrives at the server,
// byte for byte (the port shown as PORT, loadlab's version as VERSION); go test -update-wire rewrites
// testdata/wire-*.golden.
func TestQuickWireGolden(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name string
		args []string
	}{
		{"wire-quick-get", []string{"/search?q=a%20b"}},
		{"wire-quick-post", []string{"/api", "-X", "post", "-H", "Content-Type: application/json", "-H", "X-Auth-Token: s3cret", "--body", `{"a":1}`, "--no-keepalive"}},
		{"wire-quick-put-empty", []string{"/items/1", "-X", "PUT", "-H", "User-Agent: curl/8"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			w := newWireRecorder(t)
			addr := w.ln.Addr().String()
			args := append([]string{"run", "--url", "http://" + addr + tt.args[0], "-n", "1", "-c", "1"}, tt.args[1:]...)
			if _, stderr, code := cli(context.Background(), t, args...); code != 0 {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			w.mu.Lock()
			got := bytes.ReplaceAll(w.first, []byte(addr), []byte("127.0.0.1:PORT"))
			got = bytes.ReplaceAll(got, []byte("User-Agent: "+httpx.UserAgent()+"\r\n"), []byte("User-Agent: loadlab/VERSION\r\n"))
			w.mu.Unlock()
			path := filepath.Join("testdata", tt.name+".golden")
			if *updateWire {
				if err := os.WriteFile(path, got, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (go test -update-wire writes it)", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("the request on the wire differs from %s:\ngot:\n%s\nwant:\n%s", path, strings.ReplaceAll(string(got), "\r", `\r`), strings.ReplaceAll(string(want), "\r", `\r`))
			}
		})
	}
}
