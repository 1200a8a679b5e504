package httpx

import (
	"bytes"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// golden compares got with testdata/NAME.golden, or rewrites it with -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to write it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s: the request differs from %s\ngot:\n%q\nwant:\n%q", name, path, got, want)
	}
}

// TestQuickRequestGolden: quick mode's request (httpx.Request, as
// cmd/loadlab's parseQuick makes it), byte for byte.
func TestQuickRequestGolden(t *testing.T) {
	for _, tt := range []struct {
		name string
		req  Request
	}{
		{"quick-get", Request{Method: "GET", Target: "/", Host: "127.0.0.1:8080"}},
		{"quick-get-query-close", Request{Method: "GET", Target: "/search?q=a%20b", Host: "example.com", Close: true}},
		{"quick-post-json", Request{Method: "POST", Target: "/api", Host: "127.0.0.1:8080",
			Header: []Header{{"Content-Type", "application/json"}, {"Authorization", "Bearer t0k"}}, Body: []byte(`{"a":1}`)}},
		{"quick-post-empty", Request{Method: "POST", Target: "/ping", Host: "h"}},
		{"quick-own-host-agent-length", Request{Method: "PUT", Target: "/x", Host: "h",
			Header: []Header{{"host", "other"}, {"User-Agent", "curl/8"}, {"Content-Length", "3"}}, Body: []byte("abc")}},
		{"quick-head", Request{Method: "HEAD", Target: "/", Host: "h"}},
	} {
		t.Run(tt.name, func(t *testing.T) { golden(t, tt.name, tt.req.Append(nil)) })
	}
}

func TestRequestWriter(t *testing.T) {
	t.Run("content type with a body", func(t *testing.T) {
		w := RequestWriter{ContentType: "application/x-www-form-urlencoded"}
		dst := w.AppendStart(nil, "POST", []byte("/login"), "h")
		got := string(w.AppendEnd(dst, "POST", []byte("a=1"), true))
		want := "POST /login HTTP/1.1\r\nHost: h\r\nUser-Agent: loadlab/dev\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 3\r\n\r\na=1"
		if got != want {
			t.Errorf("got %q, want %q", got, want)
		}
	})
	t.Run("an empty body that is a body", func(t *testing.T) {
		w := RequestWriter{ContentType: "application/json"}
		got := string(w.AppendEnd(nil, "DELETE", nil, true))
		if got != "Content-Type: application/json\r\nContent-Length: 0\r\n\r\n" {
			t.Errorf("got %q", got)
		}
	})
	t.Run("own content type", func(t *testing.T) {
		w := RequestWriter{ContentType: "application/json"}
		w.Own("content-type")
		if got := string(w.AppendEnd(nil, "POST", []byte("{}"), true)); got != "Content-Length: 2\r\n\r\n{}" {
			t.Errorf("got %q", got)
		}
	})
	for _, tt := range []struct {
		value string
		want  error
	}{
		{"ok value", nil},
		{"a\r\nX-Injected: 1", ErrLineBreak},
		{"a\nb", ErrLineBreak},
		{"a\x00b", ErrNUL},
	} {
		t.Run("value "+tt.value, func(t *testing.T) {
			dst := StartHeader([]byte("prefix"), "X-A")
			dst, err := EndHeader(dst, len(dst)-0)
			if err != nil {
				t.Fatalf("empty value: %v", err)
			}
			dst = StartHeader(dst[:0], "X-A")
			start := len(dst)
			dst = append(dst, tt.value...)
			got, err := EndHeader(dst, start)
			if !errors.Is(err, tt.want) {
				t.Fatalf("EndHeader(%q): %v, want %v", tt.value, err, tt.want)
			}
			if err == nil && string(got) != "X-A: "+tt.value+"\r\n" {
				t.Errorf("got %q", got)
			}
			if (CheckHeader("X-A", tt.value) == nil) != (tt.want == nil) {
				t.Errorf("CheckHeader and EndHeader disagree on %q", tt.value)
			}
		})
	}
}

// TestRequestWriterAllocates nothing once the buffer is large enough.
func TestRequestWriterAllocates(t *testing.T) {
	w := RequestWriter{ContentType: "application/json"}
	buf := make([]byte, 0, 512)
	target, body := []byte("/api/items?id=3"), []byte(`{"id":3}`)
	allocs := testing.AllocsPerRun(100, func() {
		dst := w.AppendStart(buf[:0], "POST", target, "127.0.0.1:8080")
		dst = AppendHeader(dst, "Accept", "application/json")
		dst = StartHeader(dst, "Authorization")
		start := len(dst)
		dst = append(dst, "Bearer abc"...)
		dst, _ = EndHeader(dst, start)
		buf = w.AppendEnd(dst, "POST", body, true)
	})
	if allocs != 0 {
		t.Errorf("%v allocations per request", allocs)
	}
}
