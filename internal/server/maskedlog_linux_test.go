//go:build linux

package server

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestLogMasked: with secrets in the spec, the server's output reaches its
// log masked, on both watchers, whether the server crashes (the log tail in
// the error is there, its last words included) or is stopped (the log is
// whole when Stop returns, though a secret is split across two writes).
func TestLogMasked(t *testing.T) {
	secrets := []string{"s3cretvalue", "hunter22"}
	type proc interface {
		Done() <-chan struct{}
		Err() error
		Stop() error
	}
	starts := map[string]func(Spec) (proc, error){
		"proc":     func(s Spec) (proc, error) { return Start(context.Background(), s) },
		"portable": func(s Spec) (proc, error) { return startPortable(context.Background(), s) },
	}
	for name, start := range starts {
		t.Run(name+"/crash", func(t *testing.T) {
			log := filepath.Join(t.TempDir(), "server.log")
			p, err := start(Spec{Shell: "echo key s3cretvalue; echo pw hunter22 >&2; sleep 0.2; echo dying; exit 3", SampleInterval: 50 * time.Millisecond, LogPath: log, Secrets: secrets})
			if err != nil {
				t.Fatal(err)
			}
			defer p.Stop()
			select {
			case <-p.Done():
			case <-time.After(10 * time.Second):
				t.Fatal("the crash was not noticed")
			}
			var exit *ExitError
			if !errors.As(p.Err(), &exit) || exit.Status.Code != 3 {
				t.Fatalf("Err = %v, want exit status 3", p.Err())
			}
			if tail := strings.Join(exit.LogTail, "\n"); !strings.Contains(tail, "dying") || strings.Contains(tail, "s3cret") {
				t.Errorf("log tail %q", exit.LogTail)
			}
			b, _ := os.ReadFile(log)
			if string(b) != "key ***\npw ***\ndying\n" {
				t.Errorf("server.log is %q", b)
			}
		})
		t.Run(name+"/stop", func(t *testing.T) {
			log := filepath.Join(t.TempDir(), "server.log")
			p, err := start(Spec{Shell: "printf 'a s3cr'; sleep 0.1; printf 'etvalue b'; exec sleep 30", SampleInterval: 50 * time.Millisecond, LogPath: log, Secrets: secrets})
			if err != nil {
				t.Fatal(err)
			}
			time.Sleep(500 * time.Millisecond)
			began := time.Now()
			p.Stop()
			if took := time.Since(began); took > 3*time.Second {
				t.Errorf("Stop took %v", took)
			}
			b, _ := os.ReadFile(log)
			if string(b) != "a *** b" {
				t.Errorf("server.log is %q", b)
			}
		})
	}
}
