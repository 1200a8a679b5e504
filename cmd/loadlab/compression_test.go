package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/andybalholm/brotli"
	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zlib"
	"github.com/klauspost/compress/zstd"

	"github.com/loadlab/loadlab/internal/result"
)

// compressing is a real server on loopback that compresses its pages as
// nginx and Rails do: with the coding the path names, whatever was asked,
// and records the Accept-Encoding it got.
func compressing(t *testing.T) (string, func() []string) {
	var mu sync.Mutex
	var asked []string
	page := `<html><head>` + strings.Repeat("<meta name=x>", 200) + `</head><body><div class="flash alert">Invalid user or password</div></body></html>`
	bomb := func() []byte {
		var b bytes.Buffer
		w := gzip.NewWriter(&b)
		w.Write(make([]byte, 32<<20))
		w.Close()
		return b.Bytes()
	}()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		asked = append(asked, r.Header.Get("Accept-Encoding"))
		mu.Unlock()
		coding := strings.TrimPrefix(r.URL.Path, "/")
		if coding == "not-modified" { // a 304 names the coding its body would have
			w.Header().Set("Content-Encoding", "gzip")
			w.WriteHeader(http.StatusNotModified)
			return
		}
		body := []byte(page)
		if strings.HasSuffix(coding, ".json") {
			coding = strings.TrimSuffix(coding, ".json")
			body = []byte(`{"token": "t-42", "user": {"name": "ann"}}`)
			w.Header().Set("Content-Type", "application/json")
		}
		var b bytes.Buffer
		switch coding {
		case "gzip":
			z := gzip.NewWriter(&b)
			z.Write(body)
			z.Close()
		case "deflate":
			z := zlib.NewWriter(&b)
			z.Write(body)
			z.Close()
		case "br":
			z := brotli.NewWriter(&b)
			z.Write(body)
			z.Close()
		case "zstd":
			z, _ := zstd.NewWriter(&b)
			z.Write(body)
			z.Close()
		case "bomb":
			coding = "gzip"
			b.Write(bomb)
		default:
			w.Write(body)
			return
		}
		w.Header().Set("Content-Encoding", coding)
		w.Write(b.Bytes())
	}))
	t.Cleanup(srv.Close)
	return srv.URL, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), asked...)
	}
}

// TestCompression: a plan asks for compression as a browser does, checks
// and captures read the decoded body of every coding, the summary gives
// wire and decoded bytes, and a decompression bomb is a counted protocol
// error under max_body.
func TestCompression(t *testing.T) {
	t.Parallel()
	url, asked := compressing(t)
	dir := t.TempDir()
	plan := filepath.Join(dir, "plan.yaml")
	os.WriteFile(plan, []byte(`name: compressed
target: `+url+`
http: { max_body: 1MiB }
steps:
  - { get: /gzip, expect: { contains: Invalid user or password } }
  - { get: /deflate, expect: { contains: Invalid user or password } }
  - { get: /br, expect: { contains: Invalid user or password } }
  - { get: /zstd, expect: { contains: Invalid user or password } }
  - get: /gzip.json
    capture: { token: { json: "$.token" } }
  - { get: "/br.json?t={{ token }}", expect: { json: { "$.user.name": ann } } }
  - { get: /not-modified, expect: { status: 304 } }
  - { head: /gzip, expect: { status: 200 } }
load: { closed: { vus: 2, iterations: 5 } }
`), 0o644)
	out := filepath.Join(dir, "out")
	_, stderr, code := cli(context.Background(), t, "run", plan, "--out", out)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var r result.Result
	data, _ := os.ReadFile(filepath.Join(out, "result.json"))
	json.Unmarshal(data, &r)
	s := r.Summary
	if s.Checks.Failed != 0 || s.Checks.Passed != 80 || s.Decoded != 60 || s.BytesDecoded <= 2*s.BytesReceived {
		t.Errorf("checks %+v, %d decoded, %d bytes received, %d decoded", s.Checks, s.Decoded, s.BytesReceived, s.BytesDecoded)
	}
	for _, a := range asked() {
		if a != "gzip, deflate, br, zstd" {
			t.Fatalf("the plan sent Accept-Encoding %q", a)
		}
	}

	// A bomb: 32 MiB of zeros in 32 KiB of gzip, over the 1 MiB max_body.
	os.WriteFile(plan, []byte("name: bomb\ntarget: "+url+"\nhttp: { max_body: 1MiB }\nsteps: [ { get: /bomb } ]\nload: { closed: { vus: 1, iterations: 3 } }\n"), 0o644)
	stdout, stderr, code := cli(context.Background(), t, "run", plan, "--json")
	var js result.Summary
	json.Unmarshal([]byte(stdout), &js)
	if js.Errors.Protocol != 3 || !strings.Contains(js.Errors.Examples["protocol"], "decoded body over the 1048576 byte limit") {
		t.Errorf("bomb: exit %d, errors %+v\n%s", code, js.Errors, stderr)
	}

	// Quick mode sends none unless --compressed, as curl.
	before := len(asked())
	if _, stderr, code := cli(context.Background(), t, "run", "--url", url+"/gzip", "-n", "4", "-c", "1"); code != 0 {
		t.Fatalf("quick: exit %d: %s", code, stderr)
	}
	if a := asked()[before:]; a[0] != "" {
		t.Errorf("quick mode sent Accept-Encoding %q", a[0])
	}
	stdout, _, code = cli(context.Background(), t, "run", "--url", url+"/gzip", "-n", "4", "-c", "1", "--compressed")
	if a := asked(); code != 0 || a[len(a)-1] != "gzip, deflate, br, zstd" || !strings.Contains(stdout, "decoded (4 of 4 bodies compressed)") {
		t.Errorf("--compressed: exit %d, sent %q\n%s", code, a[len(a)-1], stdout)
	}
	// http.compression: false sends none; a list sends those; a bad name is refused.
	os.WriteFile(plan, []byte("name: none\ntarget: "+url+"\nhttp: { compression: false }\nsteps: [ { get: /plain } ]\nload: { closed: { vus: 1, iterations: 1 } }\n"), 0o644)
	cli(context.Background(), t, "run", plan)
	if a := asked(); a[len(a)-1] != "" {
		t.Errorf("compression: false sent %q", a[len(a)-1])
	}
	os.WriteFile(plan, []byte("name: some\ntarget: "+url+"\nhttp: { compression: [br, gzip] }\nsteps: [ { get: /plain } ]\nload: { closed: { vus: 1, iterations: 1 } }\n"), 0o644)
	cli(context.Background(), t, "run", plan)
	if a := asked(); a[len(a)-1] != "br, gzip" {
		t.Errorf("compression: [br, gzip] sent %q", a[len(a)-1])
	}
	os.WriteFile(plan, []byte("name: bad\ntarget: "+url+"\nhttp: { compression: [gzp] }\nsteps: [ { get: /plain } ]\nload: { closed: { vus: 1, iterations: 1 } }\n"), 0o644)
	if _, stderr, code := cli(context.Background(), t, "run", plan); code != 2 || !strings.Contains(stderr, `plan.yaml:3:23: http.compression: unknown coding "gzp"`) || !strings.Contains(stderr, `did you mean "gzip"`) {
		t.Errorf("unknown coding: exit %d, %q", code, stderr)
	}
}
