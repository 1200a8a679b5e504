package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/loadlab/loadlab/internal/result"
)

// TestBodyFileStreamed: a --body-file over what is held in memory (16 MiB),
// with --max-request-body raised to take it, is sent from the file chunk by
// chunk: three POSTs of a 96 MiB file, on one kept-alive connection, reach
// the server byte for byte, on the epoll engine (plain and TLS) and the
// portable one, and so does a plan's body_file under a raised
// http.max_request_body, while loadlab's peak RSS stays within 48 MiB of the idle
// binary's. Before, the file was read whole: the peak was at least 96 MiB
// over it.
func TestBodyFileStreamed(t *testing.T) {
	if testing.Short() {
		t.Skip("a 96 MiB body, three times")
	}
	const size = 96<<20 + 12345
	body := make([]byte, size)
	rng := rand.NewChaCha8([32]byte{1, 2, 3})
	rng.Read(body)
	want := sha256.Sum256(body)
	path := filepath.Join(t.TempDir(), "body.bin")
	if err := os.WriteFile(path, body, 0o600); err != nil {
		t.Fatal(err)
	}
	body = nil
	idle := exec.Command(os.Args[0], "run", "--url", "http://127.0.0.1:1/", "-n", "1", "--no-history")
	idle.Env = append(os.Environ(), "LOADLAB_TEST_MAIN=1")
	base, _ := peakRSS(t, idle)
	planFile := filepath.Join(filepath.Dir(path), "plan.yaml")
	os.WriteFile(planFile, []byte(`
target: "{{ env.TARGET }}"
http: { max_request_body: 1GiB, insecure: true }
steps:
  - post: /
    body_file: body.bin
load: { closed: { vus: 1, iterations: 3 } }
`), 0o600)
	for _, tt := range []struct {
		name, engine string
		tls, plan    bool
	}{{"epoll", "epoll", false, false}, {"epoll-tls", "epoll", true, false}, {"portable", "portable", false, false},
		{"plan-body-file", "epoll", false, true}, {"plan-body-file-portable", "portable", false, true}} {
		t.Run(tt.name, func(t *testing.T) {
			var mu sync.Mutex
			var got []string
			h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				d := sha256.New()
				n, err := io.Copy(d, r.Body)
				mu.Lock()
				switch {
				case err != nil:
					got = append(got, "read: "+err.Error())
				case n != size || !bytes.Equal(d.Sum(nil), want[:]):
					got = append(got, "a different body")
				default:
					got = append(got, "exact")
				}
				mu.Unlock()
			})
			srv := httptest.NewUnstartedServer(h)
			if tt.tls {
				srv.StartTLS()
			} else {
				srv.Start()
			}
			t.Cleanup(srv.Close)
			cmd := exec.Command(os.Args[0], "run", "--url", srv.URL, "-X", "POST", "--body-file", path, "--max-request-body", "1GiB",
				"-n", "3", "-c", "1", "--timeout", "30s", "--insecure", "--no-history", "--json")
			if tt.plan {
				cmd = exec.Command(os.Args[0], "run", planFile, "-e", "TARGET="+srv.URL, "--no-history", "--json")
			}
			cmd.Env = append(os.Environ(), "LOADLAB_TEST_MAIN=1", "LOADLAB_ENGINE="+tt.engine)
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			rss, err := peakRSS(t, cmd)
			if err != nil {
				t.Fatalf("%v: %s", err, stderr.String())
			}
			var sum result.Summary
			if err := json.Unmarshal(stdout.Bytes(), &sum); err != nil {
				t.Fatalf("%v: %s", err, stdout.String())
			}
			mu.Lock()
			defer mu.Unlock()
			if sum.Requests != 3 || sum.Errors.Total != 0 || len(got) != 3 || got[0] != "exact" || got[1] != "exact" || got[2] != "exact" {
				t.Errorf("%d requests, %d errors; the server got %q: want 3 exact bodies", sum.Requests, sum.Errors.Total, got)
			}
			t.Logf("3 x %d MiB from --body-file: peak RSS %.1f MiB, %.1f over the binary's refusing a run", size>>20, float64(rss)/(1<<20), float64(rss-base)/(1<<20))
			if rss-base > 48<<20 {
				t.Errorf("peak RSS %d MiB, %d over the binary's refusing a run %d MiB: want within 48 MiB, the body is %d MiB", rss>>20, (rss-base)>>20, base>>20, size>>20)
			}
		})
	}
}

// peakRSS runs cmd and returns its peak RSS, VmHWM of /proc/PID/status
// read every 5 ms until it exits. The child's rusage will not do: the test
// binary starts it with vfork, and Linux counts the parent's RSS, which the
// child shared until its exec, in the child's ru_maxrss.
func peakRSS(t *testing.T, cmd *exec.Cmd) (int64, error) {
	t.Helper()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	status := "/proc/" + strconv.Itoa(cmd.Process.Pid) + "/status"
	var peak int64
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for {
		if b, err := os.ReadFile(status); err == nil {
			if _, rest, ok := strings.Cut(string(b), "\nVmHWM:"); ok {
				f := strings.Fields(rest)
				if kb, err := strconv.ParseInt(f[0], 10, 64); err == nil && len(f) > 1 && f[1] == "kB" {
					peak = max(peak, kb<<10)
				}
			}
		}
		select {
		case err := <-done:
			return peak, err
		case <-tick.C:
		}
	}
}
