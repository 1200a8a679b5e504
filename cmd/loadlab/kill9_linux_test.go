//go:build linux

package main

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/loadlab/loadlab/internal/store"
	"github.com/loadlab/loadlab/internal/target"
	"github.com/loadlab/loadlab/internal/target/targettest"
)

// marked lists the live processes whose environment holds mark, as
// "pid cmdline": the server's whole tree inherits it, even a grandchild
// whose command line says nothing.
func marked(mark string) []string {
	var out []string
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil || e.Name() == strconv.Itoa(os.Getpid()) {
			continue
		}
		env, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if err != nil || !bytes.Contains(env, []byte("\x00"+mark+"\x00")) && !bytes.HasPrefix(env, []byte(mark+"\x00")) {
			continue
		}
		stat, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if i := bytes.LastIndexByte(stat, ')'); i > 0 && len(stat) > i+2 && stat[i+2] == 'Z' {
			continue
		}
		cmd, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		out = append(out, e.Name()+" "+strings.ReplaceAll(string(cmd), "\x00", " "))
	}
	return out
}

// killPlan is an experiment of 2 points, repeat times, whose server is loadlab target behind
// a shell that also starts two grandchildren: a sleep, and a sleep that
// ignores SIGTERM, so every stop lasts its grace. While dir/slow exists the
// shell waits 3 s before it starts the server (a slow start).
func killPlan(t *testing.T, mark string, repeat int, duration string) (path, url, dir string) {
	addr := targettest.FreeAddr(t)
	argv, _ := targettest.Command(t, target.Options{}, addr)
	dir = t.TempDir()
	path = filepath.Join(dir, "plan.yaml")
	os.WriteFile(path, []byte(fmt.Sprintf(`
name: kill9
target: http://%[1]s
steps: [ { get: / } ]
load: { closed: { vus: 2, duration: %[5]s } }
server:
  run: "sleep 300 & (trap '' TERM; exec sleep 301) & if [ -e %[2]s/slow ]; then sleep 3; fi; %[3]s '-test.run=^NoKill9$'; wait"
  env:
    LOADLAB_TARGETTEST_ADDR: %[1]s
    LOADLAB_TARGETTEST_OPTIONS: '{"Workers": {{ workers }}}'
    %[4]s
  ready: http://%[1]s/health
  ready_timeout: 20s
  grace: 1s
params: { workers: [1, 2] }
baseline: { workers: 1 }
repeat: %[6]d
seed: 3
`, addr, dir, argv[0], strings.Replace(mark, "=", ": ", 1), duration, repeat)), 0o644)
	return path, "http://" + addr, dir
}

// TestSIGKILLLeavesNothing SIGKILLs loadlab mid-run, during the readiness
// wait and during the stop: within 5 s no process of the server's tree is
// left, and the same command then resumes the experiment to completion.
func TestSIGKILLLeavesNothing(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("loadlab processes killed and experiments resumed")
	}
	for _, when := range []string{"mid-run", "readiness", "stop"} {
		t.Run(when, func(t *testing.T) {
			mark := fmt.Sprintf("KILL9_MARK=%s%d", strings.ReplaceAll(when, "-", ""), time.Now().UnixNano())
			path, url, dir := killPlan(t, mark, 1, "2s")
			if when == "readiness" {
				os.WriteFile(filepath.Join(dir, "slow"), nil, 0o644)
			}
			out := t.TempDir()
			cmd := exec.Command(os.Args[0], "run", path, "--out", out)
			cmd.Env = append(os.Environ(), "LOADLAB_TEST_MAIN=1")
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			defer cmd.Process.Kill()
			deadline := time.Now().Add(20 * time.Second)
			seenServer := false
			for !killMoment(when, url, mark, &seenServer) {
				if time.Now().After(deadline) {
					t.Fatalf("the moment %q never came", when)
				}
				time.Sleep(20 * time.Millisecond)
			}
			if len(marked(mark)) == 0 {
				t.Fatal("no process of the tree to begin with")
			}
			cmd.Process.Signal(syscall.SIGKILL)
			cmd.Wait()
			killed := time.Now()
			for left := marked(mark); len(left) > 0; left = marked(mark) {
				if time.Since(killed) > 5*time.Second {
					t.Fatalf("5 s after loadlab's SIGKILL, left behind: %v", left)
				}
				time.Sleep(50 * time.Millisecond)
			}
			t.Logf("%s: the tree was gone %v after the SIGKILL", when, time.Since(killed).Round(time.Millisecond))
			os.Remove(filepath.Join(dir, "slow"))

			stdout, stderr, code := cli(context.Background(), t, "run", path, "--out", out)
			if code != 0 {
				t.Fatalf("resume: exit %d: %s\n%s", code, stderr, stdout)
			}
			if left := marked(mark); len(left) > 0 {
				t.Errorf("after the resumed experiment: %v", left)
			}
			h, err := store.OpenHistory(out)
			if err != nil {
				t.Fatal(err)
			}
			defer h.Close()
			runs, _ := h.Runs()
			seen := map[int]bool{}
			for _, r := range runs {
				if r.Status != store.StatusDone || seen[r.Index] {
					t.Errorf("run %d: %v, seen %v", r.Index, r.Status, seen[r.Index])
				}
				seen[r.Index] = true
			}
			if len(runs) != 2 {
				t.Errorf("%d runs recorded, want 2", len(runs))
			}
		})
	}
}

// killMoment reports whether loadlab is at the moment to kill it.
// seenServer remembers, for "stop", that the server was up.
func killMoment(when, url, mark string, seenServer *bool) bool {
	procs := marked(mark)
	server := false
	for _, p := range procs {
		_, cmdline, _ := strings.Cut(p, " ")
		server = server || !strings.HasPrefix(cmdline, "/bin/sh") && strings.Contains(cmdline, "NoKill9")
	}
	switch when {
	case "mid-run":
		return server && answers(url)
	case "readiness":
		// The shell and its sleeps are up; the server is not started yet.
		return len(procs) >= 3 && !server
	default: // stop: the server has exited, the sleep that ignores SIGTERM has not
		if server {
			*seenServer = true
			return false
		}
		return *seenServer && len(procs) > 0
	}
}

func answers(url string) bool {
	client := &http.Client{Timeout: time.Second}
	resp, err := client.Get(url + "/health")
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == 200
}

// TestKill9Soak SIGKILLs an experiment's loadlab a dozen times at random
// moments (starting the server, sending load, stopping it, writing files),
// resuming it after each kill, then lets it finish: every run is done
// exactly once, nothing of any server tree is left, and experiment.db
// passes PRAGMA integrity_check.
func TestKill9Soak(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("a dozen SIGKILLs of an experiment")
	}
	seed := time.Now().UnixNano()
	rng := rand.New(rand.NewPCG(uint64(seed), 0))
	t.Logf("seed %d", seed)
	mark := fmt.Sprintf("KILL9_MARK=soak%d", seed)
	path, _, _ := killPlan(t, mark, 3, "1s")
	out := t.TempDir()
	for i := range 12 {
		cmd := exec.Command(os.Args[0], "run", path, "--out", out)
		cmd.Env = append(os.Environ(), "LOADLAB_TEST_MAIN=1")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		after := time.Duration(100+rng.IntN(2900)) * time.Millisecond
		exited := make(chan error, 1)
		go func() { exited <- cmd.Wait() }()
		select {
		case err := <-exited:
			t.Logf("kill %d: loadlab ended by itself before %v: %v", i, after, err)
		case <-time.After(after):
			cmd.Process.Signal(syscall.SIGKILL)
			<-exited
		}
		killed := time.Now()
		for left := marked(mark); len(left) > 0; left = marked(mark) {
			if time.Since(killed) > 5*time.Second {
				t.Fatalf("kill %d (after %v): 5 s later, left behind: %v", i, after, left)
			}
			time.Sleep(50 * time.Millisecond)
		}
		t.Logf("kill %d after %v: %d runs done", i, after, doneRuns(t, out))
	}
	stdout, stderr, code := cli(context.Background(), t, "run", path, "--out", out)
	if code != 0 {
		t.Fatalf("final resume: exit %d: %s\n%s", code, stderr, stdout)
	}
	if left := marked(mark); len(left) > 0 {
		t.Errorf("after the experiment: %v", left)
	}
	h, err := store.OpenHistory(out)
	if err != nil {
		t.Fatal(err)
	}
	runs, _ := h.Runs()
	h.Close()
	seen := map[int]bool{}
	for _, r := range runs {
		if r.Status != store.StatusDone || seen[r.Index] {
			t.Errorf("run %d: %v, seen before %v", r.Index, r.Status, seen[r.Index])
		}
		seen[r.Index] = true
	}
	if len(runs) != 6 {
		t.Errorf("%d runs recorded, want 6", len(runs))
	}
	db, err := sql.Open("sqlite", "file:"+filepath.Join(out, store.HistoryFile))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var check string
	if err := db.QueryRow("PRAGMA integrity_check").Scan(&check); err != nil || check != "ok" {
		t.Errorf("integrity_check: %q, %v", check, err)
	}
}
