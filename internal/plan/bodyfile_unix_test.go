//go:build unix

package plan

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestBodyFile: body_file: sends a file as it is, braces and all; a file
// that is not regular (a FIFO with no writer, which blocked the open
// before; /dev/zero) or is over http.max_request_body is refused where the
// plan names it, within a second; and so is a CSV data source that is a
// FIFO.
func TestBodyFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "body.txt"), []byte("{{ not a template }}\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "big.bin"), make([]byte, 2<<10), 0o644)
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skip("no FIFOs here:", err)
	}
	load := func(step, extra string) (*Plan, error) {
		path := filepath.Join(dir, "plan.yaml")
		os.WriteFile(path, []byte(renderedPlan(step, extra)), 0o644)
		began := time.Now()
		defer func() {
			if took := time.Since(began); took > time.Second {
				t.Errorf("loading took %v", took)
			}
		}()
		return Load(path, Options{})
	}
	p, err := load("post: /\n    body_file: body.txt", "")
	if err != nil {
		t.Fatal(err)
	}
	if req := build(t, p); !strings.HasSuffix(req, "Content-Length: 21\r\n\r\n{{ not a template }}\n") {
		t.Errorf("the request is %q", req)
	}
	for _, tt := range []struct{ step, extra, want string }{
		{"post: /\n    body_file: fifo", "", ":4:16: body_file: " + fifo + " is not a regular file"},
		{"post: /\n    body_file: /dev/zero", "", ":4:16: body_file: /dev/zero is not a regular file"},
		{"post: /\n    body_file: big.bin", "http: { max_request_body: 1KiB }\n", ":4:16: body_file: " + filepath.Join(dir, "big.bin") + " is over 1 KiB"},
		{"post: /\n    body: x\n    body_file: body.txt", "", ":3:9: a step has one body: give json:, form:, multipart:, body: or body_file:, not several"},
		{"get: /", "data: { d: { csv: fifo } }\n", ":5:19: data source d: " + fifo + " is not a regular file"},
	} {
		if _, err := load(tt.step, tt.extra); err == nil || !strings.Contains(err.Error(), filepath.Join(dir, "plan.yaml")+tt.want) {
			t.Errorf("%s: got %v, want %q", tt.step, err, tt.want)
		}
	}
}
