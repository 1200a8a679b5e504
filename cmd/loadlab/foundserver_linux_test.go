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

// TestFoundServersOfADuet: a duet's two loopback servers are two processes,
// each found by its socket with its own CPU, their sum the server's share:
// neither side's CPU counts as a neighbour's (which would make machine_busy
// fire on every duet).
func TestFoundServersOfADuet(t *testing.T) {
	t.Parallel()
	a := targettest.Start(t, target.Options{CPU: 200 * time.Microsecond})
	b := targettest.Start(t, target.Options{CPU: 300 * time.Microsecond})
	out := filepath.Join(t.TempDir(), "duet")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	stdout, stderr, code := cli(ctx, t, "ab", "--duet", a+"/", b+"/", "-c", "2", "-d", "1s", "--rounds", "2", "--out", out)
	if code != exitOK {
		t.Fatalf("exit %d: %s\n%s", code, stderr, stdout)
	}
	r, err := store.ReadResult(filepath.Join(out, "runs", "001"))
	if err != nil {
		t.Fatal(err)
	}
	m := r.Machine
	if m == nil || len(m.ServersFound) != 2 || m.ServersFound[0].PID == m.ServersFound[1].PID {
		t.Fatalf("machine %+v: want both targets' processes found", m)
	}
	sum := 0.0
	for _, f := range m.ServersFound {
		if f.PID == os.Getpid() || f.CPUPct <= 0 {
			t.Errorf("server found %+v: want a target process with its CPU", f)
		}
		sum += f.CPUPct
	}
	if m.ServerFound == nil || m.ServerFound.PID != m.ServersFound[0].PID || m.ServerPct > sum+1e-9 || m.ServerPct < sum-1e-9 && m.ServerPct != m.BusyPct-m.LoadlabPct {
		t.Errorf("server %.2f%% (found %+v), want the sum %.2f%% of %+v", m.ServerPct, m.ServerFound, sum, m.ServersFound)
	}
}
