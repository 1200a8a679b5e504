package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/loadlab/loadlab/internal/store"
	"github.com/loadlab/loadlab/internal/target"
	"github.com/loadlab/loadlab/internal/target/targettest"
)

// TestFoundServer: a quick run against a loopback server that loadlab did
// not start finds the server by its listening socket, so its CPU is the
// server's share of the machine, not the others', and machine_busy can
// judge the others; the summary names it.
func TestFoundServer(t *testing.T) {
	t.Parallel()
	url := targettest.Start(t, target.Options{CPU: 200 * time.Microsecond})
	out := filepath.Join(t.TempDir(), "run")
	stdout, stderr, code := cli(context.Background(), t, "run", url+"/", "-c", "2", "-d", "1s", "--out", out, "--no-history")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	r, err := store.ReadResult(out)
	if err != nil {
		t.Fatal(err)
	}
	m := r.Machine
	if m == nil || m.ServerFound == nil || m.ServerFound.PID == os.Getpid() || m.ServerFound.PID <= 0 || m.ServerPct <= 0 || m.ServerUnwatched {
		t.Fatalf("machine %+v: want the target's process found, with its CPU", m)
	}
	if !strings.Contains(stdout, "found by its listening socket") {
		t.Errorf("the summary does not name the server found:\n%s", stdout)
	}
}
