//go:build unix

package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestBodyFileBounded: --body-file takes a regular file, or - for stdin,
// of at most --max-request-body (16 MiB unless raised): a FIFO with no
// writer, /dev/zero, a sparse 5 GB file and a stdin that never ends are
// each refused within a second, exit 2, before any load, where before the
// FIFO hung for ever, /dev/zero ran out of memory and the 5 GB file was
// read whole.
func TestBodyFileBounded(t *testing.T) {
	t.Parallel()
	url, requests := counting(t)
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skip("no FIFOs here:", err)
	}
	sparse := filepath.Join(dir, "sparse.bin")
	if f, err := os.Create(sparse); err != nil || f.Truncate(5<<30) != nil || f.Close() != nil {
		t.Skip("no sparse file here")
	}
	over := filepath.Join(dir, "over.bin")
	os.WriteFile(over, make([]byte, 16<<20+1), 0o644)
	for _, tt := range []struct {
		name  string
		args  []string
		stdin func() *bytes.Reader
		want  string
	}{
		{"fifo", []string{"--body-file", fifo}, nil, "--body-file " + fifo + ": not a regular file (a FIFO)"},
		{"dev-zero", []string{"--body-file", "/dev/zero"}, nil, "--body-file /dev/zero: not a regular file (a character device)"},
		{"directory", []string{"--body-file", dir}, nil, "not a regular file (a directory)"},
		{"sparse", []string{"--body-file", sparse}, nil, "the file is 5.0GiB, over --max-request-body 16.0MiB"},
		{"over", []string{"--body-file", over}, nil, "the file is 16.0MiB, over --max-request-body 16.0MiB"},
		{"over-raised-cap", []string{"--body-file", sparse, "--max-request-body", "1GiB"}, nil, "the file is 5.0GiB, over --max-request-body 1.0GiB"},
		{"body", []string{"--body", "0123456789", "--max-request-body", "8B"}, nil, "--body is 10B, over --max-request-body 8B"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			began := time.Now()
			_, stderr, code := cli(context.Background(), t, append([]string{"run", "--url", url, "-X", "POST", "-n", "1", "-c", "1", "--no-history"}, tt.args...)...)
			if took := time.Since(began); took > time.Second {
				t.Errorf("refusing took %v", took)
			}
			if code != 2 || !strings.Contains(stderr, tt.want) {
				t.Errorf("exit %d, want 2 saying %q: %s", code, tt.want, stderr)
			}
		})
	}
	t.Run("stdin-endless", func(t *testing.T) {
		t.Parallel()
		var stdout, stderr bytes.Buffer
		err := run(context.Background(), []string{"run", "--url", url, "-X", "POST", "-n", "1", "-c", "1", "--no-history", "--body-file", "-"}, &endless{}, &stdout, &stderr)
		if code := reportExit(err, &stderr); code != 2 || !strings.Contains(stderr.String(), "--body-file -: over --max-request-body 16.0MiB") {
			t.Errorf("exit %d: %s", code, stderr.String())
		}
	})
	t.Cleanup(func() {
		if n := requests.Load(); n != 0 {
			t.Errorf("%d requests reached the server", n)
		}
	})
}

// TestBodyFileSignal: a --body-file read that blocks (a stdin that never
// sends anything) stops on SIGINT and on SIGTERM, exit 2 with a message,
// where before only kill -9 ended it.
func TestBodyFileSignal(t *testing.T) {
	t.Parallel()
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			t.Parallel()
			r, w, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			defer w.Close() // never written: the read blocks
			cmd := exec.Command(os.Args[0], "run", "--url", "http://127.0.0.1:9/", "-X", "POST", "-n", "1", "--no-history", "--body-file", "-")
			cmd.Env = append(os.Environ(), "LOADLAB_TEST_MAIN=1")
			cmd.Stdin = r
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			r.Close()
			time.Sleep(300 * time.Millisecond) // into the read
			cmd.Process.Signal(sig)
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			select {
			case err = <-done:
			case <-time.After(10 * time.Second):
				cmd.Process.Kill()
				<-done
				t.Fatalf("still reading 10 s after %v", sig)
			}
			var exit *exec.ExitError
			if !errors.As(err, &exit) || exit.ExitCode() != exitUsage || !strings.Contains(stderr.String(), "--body-file -: stopped by a signal while reading the body: nothing was sent") {
				t.Errorf("after %v: %v: %s", sig, err, stderr.String())
			}
		})
	}
}
