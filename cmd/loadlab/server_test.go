package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/loadlab/loadlab/internal/result"
	"github.com/loadlab/loadlab/internal/store"
	"github.com/loadlab/loadlab/internal/target"
	"github.com/loadlab/loadlab/internal/target/targettest"
)

// alive lists the live processes whose command line contains marker.
func alive(marker string) []string {
	var out []string
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil || e.Name() == strconv.Itoa(os.Getpid()) {
			continue
		}
		cmd, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || !bytes.Contains(cmd, []byte(marker)) {
			continue
		}
		stat, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if i := bytes.LastIndexByte(stat, ')'); i > 0 && len(stat) > i+2 && stat[i+2] == 'Z' {
			continue // a zombie is dead; its parent reaps it
		}
		out = append(out, e.Name()+" "+strings.ReplaceAll(string(cmd), "\x00", " "))
	}
	return out
}

func noOrphans(t *testing.T, marker string) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Second)
	for {
		left := alive(marker)
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("processes left behind: %v", left)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// targetServer is a plan's server section that runs loadlab target (the
// test binary) with o, and a marker to find its processes by.
func targetServer(t *testing.T, o target.Options, shellWrap string) (yaml, url, marker string) {
	addr := targettest.FreeAddr(t)
	argv, env := targettest.Command(t, o, addr)
	marker = fmt.Sprintf("-test.run=^NoTest%d$", time.Now().UnixNano())
	argv[1] = marker
	var run string
	if shellWrap == "" {
		run = fmt.Sprintf("[%q, %q]", argv[0], argv[1])
	} else {
		run = strconv.Quote(fmt.Sprintf(shellWrap, argv[0]+" '"+argv[1]+"'"))
	}
	envJSON, _ := json.Marshal(env)
	return fmt.Sprintf(`
server:
  run: %s
  env: %s
  ready: http://%s/health
  ready_timeout: 10s
  grace: 2s
`, run, envJSON, addr), "http://" + addr, marker
}

func TestServerUnderTest(t *testing.T) {
	t.Parallel()
	srv, url, marker := targetServer(t, target.Options{CPU: 200 * time.Microsecond}, "")
	path := writePlan(t, map[string]string{"plan.yaml": fmt.Sprintf(`
target: %s
steps: [ { get: / } ]
load: { closed: { vus: 4, duration: 2s } }
thresholds:
  - server.rss.peak < 4GiB
  - server.cpu.avg > 1%%
%s
  memory_quota: 1MiB
`, url, srv)})
	out := t.TempDir()
	stdout, stderr, code := cli(context.Background(), t, "run", path, "--out", out)
	if code != 0 {
		t.Fatalf("exit %d: %s\n%s", code, stderr, stdout)
	}
	noOrphans(t, marker)
	r, err := store.ReadResult(out)
	if err != nil {
		t.Fatal(err)
	}
	sv := r.Server
	if sv == nil || sv.RSSPeak < 1<<20 || sv.CPUAvg <= 1 || sv.ProcessesPeak != 1 || sv.ThreadsPeak < 2 || sv.FDsPeak < 3 || len(sv.Series) < 6 {
		t.Fatalf("server figures %+v", sv)
	}
	if sv.Quota == nil || !sv.Quota.PeakExceeded || !hasWarning(r, "memory_quota") {
		t.Errorf("a 1 MiB quota is not reported as exceeded: %+v %v", sv.Quota, r.Validity)
	}
	if g := r.Generator; g == nil || g.CPUAvg <= 0 || g.RSSPeak <= 0 {
		t.Errorf("generator %+v", g)
	}
	for _, th := range r.Thresholds {
		if !th.Pass {
			t.Errorf("threshold %s: %s", th.Text, th.Detail)
		}
	}
	if _, err := os.Stat(filepath.Join(out, "server.log")); err != nil {
		t.Errorf("no server.log: %v", err)
	}
	if !strings.Contains(stdout, "server ") || !strings.Contains(stdout, "quota") {
		t.Errorf("summary:\n%s", stdout)
	}
}

func hasWarning(r *result.Result, code string) bool {
	for _, w := range r.Validity {
		if w.Code == code {
			return true
		}
	}
	return false
}

// TestServerCrashMidRun: the server dies during the load. The run fails
// (exit 1) with the log tail, keeps what it measured, and leaves nothing.
func TestServerCrashMidRun(t *testing.T) {
	t.Parallel()
	srv, url, marker := targetServer(t, target.Options{}, "%s & sleep 3; echo 'worker boot failure: out of sockets'; kill -9 $!; exit 7")
	path := writePlan(t, map[string]string{"plan.yaml": fmt.Sprintf("target: %s\nsteps: [ { get: / } ]\nload: { closed: { vus: 2, duration: 30s } }\n%s", url, srv)})
	out := t.TempDir()
	start := time.Now()
	stdout, stderr, code := cli(context.Background(), t, "run", path, "--out", out)
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("took %v: the run should stop when the server dies", took)
	}
	if code != exitFailed || !strings.Contains(stderr, "exited mid-run") || !strings.Contains(stderr, "exit status 7") {
		t.Errorf("exit %d, stderr %q", code, stderr)
	}
	noOrphans(t, marker)
	r, err := store.ReadResult(out)
	if err != nil {
		t.Fatal(err)
	}
	if r.Summary.Requests == 0 || r.Server == nil || r.Server.Exit == "" || !hasWarning(r, "server_exited") {
		t.Errorf("result: %d requests, server %+v", r.Summary.Requests, r.Server)
	}
	if !strings.Contains(stdout, "worker boot failure") {
		t.Errorf("the summary does not show the log tail:\n%s", stdout)
	}
}

// serving waits, for at most 20 s, until the server that loadlab starts
// answers at url: then the load is about to flow. Fixed sleeps guessed it.
func serving(url string) {
	client := &http.Client{Timeout: time.Second}
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if resp, err := client.Get(url + "/health"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
	}
}

// TestServerInterrupted: Ctrl-C stops the load and the server; the results
// so far are kept.
func TestServerInterrupted(t *testing.T) {
	t.Parallel()
	srv, url, marker := targetServer(t, target.Options{}, "")
	path := writePlan(t, map[string]string{"plan.yaml": fmt.Sprintf("target: %s\nsteps: [ { get: / } ]\nload: { closed: { vus: 2, duration: 1m } }\n%s", url, srv)})
	out := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		serving(url)
		time.Sleep(500 * time.Millisecond)
		cancel()
	}()
	_, stderr, code := cli(ctx, t, "run", path, "--out", out)
	if code != exitFailed || !strings.Contains(stderr, "interrupted") {
		t.Errorf("exit %d, stderr %q", code, stderr)
	}
	noOrphans(t, marker)
	if r, err := store.ReadResult(out); err != nil || !r.Summary.Interrupted || r.Server == nil {
		t.Errorf("result %v, %v", r, err)
	}
}

// TestCtrlCStopsServer: a real SIGINT to a loadlab process, as Ctrl-C sends
// it: the load stops, the server's tree is gone, and what was measured is
// on disk.
func TestCtrlCStopsServer(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("a loadlab process interrupted")
	}
	srv, url, marker := targetServer(t, target.Options{}, "%s & wait")
	path := writePlan(t, map[string]string{"plan.yaml": fmt.Sprintf("target: %s\nsteps: [ { get: / } ]\nload: { closed: { vus: 2, duration: 1m } }\n%s", url, srv)})
	out := t.TempDir()
	cmd := exec.Command(os.Args[0], "run", path, "--out", out)
	cmd.Env = append(os.Environ(), "LOADLAB_TEST_MAIN=1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	serving(url)
	time.Sleep(500 * time.Millisecond)
	sent := time.Now()
	cmd.Process.Signal(syscall.SIGINT)
	err := cmd.Wait()
	took := time.Since(sent)
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != exitFailed || !strings.Contains(stderr.String(), "interrupted") {
		t.Errorf("exit %v, stderr %q", err, stderr.String())
	}
	// The load stops at once; the server gets its grace period (2 s).
	if took > 4*time.Second {
		t.Errorf("loadlab took %v to stop after SIGINT", took)
	}
	noOrphans(t, marker)
	if r, err := store.ReadResult(out); err != nil || !r.Summary.Interrupted || r.Server == nil || r.Summary.Requests == 0 {
		t.Errorf("result %v, %v", r, err)
	}
}

// TestServerNotReady: a server that never becomes ready fails the run
// before any load, with its log.
func TestServerNotReady(t *testing.T) {
	t.Parallel()
	marker := fmt.Sprintf("loadlab-not-ready-%d", time.Now().UnixNano())
	addr := targettest.FreeAddr(t)
	path := writePlan(t, map[string]string{"plan.yaml": fmt.Sprintf(`
target: http://%s
steps: [ { get: / } ]
load: { closed: { vus: 1, iterations: 1 } }
server:
  run: "echo starting %s; sleep 60"
  ready: http://%s/health
  ready_timeout: 1s
`, addr, marker, addr)})
	_, stderr, code := cli(context.Background(), t, "run", path)
	if code != exitFailed || !strings.Contains(stderr, "not ready") || !strings.Contains(stderr, "starting "+marker) {
		t.Errorf("exit %d, stderr %q", code, stderr)
	}
	noOrphans(t, marker)
}

// TestServerIgnoresSIGTERM: a server that ignores the stop signal is killed
// after its grace period. The shell that started the target ignores TERM
// and never exits by itself (its command line carries the marker).
func TestServerIgnoresSIGTERM(t *testing.T) {
	t.Parallel()
	srv, url, marker := targetServer(t, target.Options{}, "trap '' TERM; %s & while :; do sleep 0.1; done")
	path := writePlan(t, map[string]string{"plan.yaml": fmt.Sprintf("target: %s\nsteps: [ { get: / } ]\nload: { closed: { vus: 1, duration: 1s } }\n%s", url, strings.Replace(srv, "grace: 2s", "grace: 700ms", 1))})
	start := time.Now()
	_, stderr, code := cli(context.Background(), t, "run", path)
	took := time.Since(start)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	// One second of load, then the grace period before SIGKILL.
	if took < 1700*time.Millisecond {
		t.Errorf("the run took %v: the stubborn shell was not given its grace period, or was never stubborn", took)
	}
	noOrphans(t, marker)
}

func TestNginxWithWorkers(t *testing.T) {
	t.Parallel()
	nginx, err := exec.LookPath("nginx")
	if err != nil {
		nginx = "/usr/sbin/nginx"
	}
	if _, err := os.Stat(nginx); err != nil {
		t.Fatal("nginx is not installed: run scripts/test-deps")
	}
	// nginx's workers run as nobody: the directory must be open to them,
	// which t.TempDir's parent is not.
	dir, err := os.MkdirTemp("", "loadlab-nginx-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	os.Chmod(dir, 0o755)
	os.MkdirAll(filepath.Join(dir, "www"), 0o755)
	os.WriteFile(filepath.Join(dir, "www", "index.html"), bytes.Repeat([]byte("x"), 500), 0o644)
	addr := targettest.FreeAddr(t)
	path := writePlan(t, map[string]string{
		"plan.yaml": fmt.Sprintf(`
vars: { workers: 3 }
target: http://%[1]s
steps:
  - get: /index.html
    expect: { status: 200 }
load: { closed: { vus: 10, duration: 2s } }
thresholds: [ "checks > 99%%" ]
server:
  run: [ %[2]q, -p, %[3]q, -c, nginx.conf ]
  dir: %[3]q
  ready: http://%[1]s/index.html
  files: { nginx.conf: nginx.conf.tmpl }
`, addr, nginx, dir),
		"nginx.conf.tmpl": fmt.Sprintf(`daemon off;
master_process on;
worker_processes {{ workers }};
pid %[1]s/nginx.pid;
error_log stderr warn;
events { worker_connections 1024; }
http {
  access_log off;
  client_body_temp_path %[1]s/body; proxy_temp_path %[1]s/proxy; fastcgi_temp_path %[1]s/fcgi; uwsgi_temp_path %[1]s/uwsgi; scgi_temp_path %[1]s/scgi;
  server { listen %[2]s; root %[1]s/www; }
}
`, dir, addr),
	})
	out := t.TempDir()
	// nginx's workers are named "nginx: worker process", with nothing of
	// this test in their command line: record the tree's PIDs while it
	// runs, from the master's pid file, to check that none is left.
	pids := map[int]bool{}
	watch, watched := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(watched)
		for {
			if b, err := os.ReadFile(filepath.Join(dir, "nginx.pid")); err == nil {
				if master, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
					pids[master] = true
					for _, p := range childrenOf(master) {
						pids[p] = true
					}
				}
			}
			select {
			case <-watch:
				return
			case <-time.After(50 * time.Millisecond):
			}
		}
	}()
	_, stderr, code := cli(context.Background(), t, "run", path, "--out", out)
	close(watch)
	<-watched
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	noOrphans(t, dir)
	if len(pids) != 4 {
		t.Errorf("saw nginx PIDs %v, want a master and 3 workers", pids)
	}
	for p := range pids {
		if cmd, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", p)); err == nil && strings.HasPrefix(string(cmd), "nginx") {
			t.Errorf("nginx process %d (%q) outlived the run", p, cmd)
		}
	}
	r, _ := store.ReadResult(out)
	if r.Server.ProcessesPeak != 4 || r.Summary.Errors.Total != 0 || r.Summary.Requests < 100 {
		t.Errorf("nginx: %d processes, %d requests, %d errors; want a master and 3 workers", r.Server.ProcessesPeak, r.Summary.Requests, r.Summary.Errors.Total)
	}
}

// childrenOf lists the PIDs whose parent is pid.
func childrenOf(pid int) []int {
	var out []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces, so read after ")".
		if i := bytes.LastIndexByte(stat, ')'); i >= 0 {
			if f := strings.Fields(string(stat[i+1:])); len(f) > 1 && f[1] == strconv.Itoa(pid) {
				out = append(out, p)
			}
		}
	}
	return out
}

func TestHAProxyWithBackends(t *testing.T) {
	t.Parallel()
	haproxy, err := exec.LookPath("haproxy")
	if err != nil {
		haproxy = "/usr/sbin/haproxy"
	}
	if _, err := os.Stat(haproxy); err != nil {
		t.Fatal("haproxy is not installed: run scripts/test-deps")
	}
	front, b1, b2 := targettest.FreeAddr(t), targettest.FreeAddr(t), targettest.FreeAddr(t)
	argv, env := targettest.Command(t, target.Options{Delay: time.Millisecond}, "")
	marker := fmt.Sprintf("-test.run=^NoHAProxy%d$", time.Now().UnixNano())
	backend := func(addr string) string {
		return fmt.Sprintf("%s=%s %s '%s' &", "LOADLAB_TARGETTEST_ADDR", addr, argv[0], marker)
	}
	path := writePlan(t, map[string]string{
		"plan.yaml": fmt.Sprintf(`
vars: { balance: leastconn }
target: http://%[1]s
steps: [ { get: / } ]
load: { closed: { vus: 8, duration: 2s } }
server:
  run: "%[2]s %[3]s exec %[4]s -db -f haproxy.cfg"
  env: { LOADLAB_TARGETTEST_OPTIONS: '%[5]s' }
  ready: http://%[1]s/health
  files:
    haproxy.cfg:
      content: |
        defaults
          mode http
          timeout connect 2s
          timeout client 10s
          timeout server 10s
        frontend web
          bind %[1]s
          default_backend app
        backend app
          balance {{ balance }}
          server one %[6]s
          server two %[7]s
`, front, backend(b1), backend(b2), haproxy, env[targettest.EnvOptions], b1, b2),
	})
	out := t.TempDir()
	_, stderr, code := cli(context.Background(), t, "run", path, "--out", out)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	noOrphans(t, marker)
	r, _ := store.ReadResult(out)
	if r.Server.ProcessesPeak < 3 || r.Summary.Errors.Total != 0 || r.Summary.Requests < 100 {
		t.Errorf("haproxy: %d processes, %d requests, %d errors; want haproxy and two backends", r.Server.ProcessesPeak, r.Summary.Requests, r.Summary.Errors.Total)
	}
	if !strings.Contains(r.Plan, "balance {{ balance }}") {
		t.Errorf("the result does not keep the plan")
	}
}
