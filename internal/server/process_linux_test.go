//go:build linux

package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// fastSampling keeps the tests quick: members are seen within 50 ms.
const fastSampling = 50 * time.Millisecond

func TestStopLeavesNothing(t *testing.T) {
	mySession, err := unix.Getsid(0)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		shell string
		grace time.Duration
		// running says when the tree is fully up, so the recorder has seen all of it.
		running func(p *Process, m []Member) bool
		minStop time.Duration // Stop must wait at least this long (the grace)
	}{
		{
			name:  "shell with children",
			shell: "sleep %[1]s & sleep %[1]s & wait",
			running: func(p *Process, m []Member) bool {
				return len(m) == 3 && countNamed(m, "sleep") == 2
			},
		},
		{
			// The started shell exits 0 after the inner one forked a sleep into a new
			// session: a classic double fork. The sleep must be found and killed.
			name:  "daemonizing double fork",
			shell: "setsid sh -c 'sleep %[1]s >/dev/null 2>&1 &'; echo forked; exit 0",
			running: func(p *Process, m []Member) bool {
				for _, x := range m {
					if x.PID == p.PID() {
						return false // the started process must have exited
					}
				}
				return len(m) == 1 && m[0].Name == "sleep" && m[0].Session != mySession && m[0].Parent == os.Getpid()
			},
		},
		{
			name:  "ignores SIGTERM",
			shell: "trap '' TERM; sleep %[1]s & wait",
			grace: 300 * time.Millisecond,
			running: func(p *Process, m []Member) bool {
				return len(m) == 2 && countNamed(m, "sleep") == 1
			},
			minStop: 300 * time.Millisecond,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := Start(context.Background(), Spec{
				Shell:          fmt.Sprintf(tt.shell, uniqueSleep()),
				Grace:          tt.grace,
				LogPath:        filepath.Join(t.TempDir(), "server.log"),
				SampleInterval: fastSampling,
			})
			if err != nil {
				t.Fatal(err)
			}
			rec := newRecorder()
			rec.await(t, p, "the tree to be up", 5*time.Second, func(m []Member) bool { return tt.running(p, m) })
			select {
			case <-p.Done():
				t.Fatalf("Done closed while the server runs: %v", p.Err())
			default:
			}
			took := stopWithin(t, p, tt.minStop+3*time.Second)
			if took < tt.minStop {
				t.Errorf("Stop took %v, less than the grace %v", took, tt.minStop)
			}
			if err := p.Err(); err != nil {
				t.Errorf("Err after Stop = %v, want nil", err)
			}
			if err := p.Stop(); err != nil {
				t.Errorf("second Stop = %v", err)
			}
			rec.assertGone(t)
		})
	}
}

func TestContextCancelStopsServer(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	p, err := Start(ctx, Spec{
		Shell:          fmt.Sprintf("sleep %[1]s & sleep %[1]s & wait", uniqueSleep()),
		SampleInterval: fastSampling,
	})
	if err != nil {
		t.Fatal(err)
	}
	rec := newRecorder()
	rec.await(t, p, "three processes", 5*time.Second, func(m []Member) bool { return len(m) == 3 })
	cancel()
	select {
	case <-p.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("Done not closed 5s after the context was cancelled")
	}
	if err := p.Err(); !errors.Is(err, context.Canceled) {
		t.Errorf("Err = %v, want one wrapping context.Canceled", err)
	}
	if err := p.Stop(); err != nil {
		t.Errorf("Stop after cancellation = %v", err)
	}
	rec.assertGone(t)
}

func TestCrashIsReported(t *testing.T) {
	tests := []struct {
		name    string
		shell   string
		crashed bool
		status  ExitStatus
		tail    string
	}{
		{
			name:    "exit status with children left",
			shell:   "sleep %[1]s & sleep %[1]s & sleep 0.3; echo 'fatal: out of cheese' >&2; exit 3",
			crashed: true, status: ExitStatus{Code: 3}, tail: "fatal: out of cheese",
		},
		{
			name:    "killed by a signal",
			shell:   "sleep %[1]s & sleep 0.3; echo 'about to fault'; kill -SEGV $$",
			crashed: true, status: ExitStatus{Code: -1, Signal: syscall.SIGSEGV}, tail: "about to fault",
		},
		{
			name:    "clean exit of the whole tree",
			shell:   "sleep 0.3; echo bye; exit 0 # %[1]s",
			crashed: false, status: ExitStatus{}, tail: "bye",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := Start(context.Background(), Spec{
				Shell:          fmt.Sprintf(tt.shell, uniqueSleep()),
				LogPath:        filepath.Join(t.TempDir(), "server.log"),
				SampleInterval: fastSampling,
			})
			if err != nil {
				t.Fatal(err)
			}
			rec := newRecorder()
			rec.await(t, p, "the tree", 5*time.Second, func(m []Member) bool { return len(m) >= 1 })
			deadline := time.After(5 * time.Second)
		wait:
			for {
				select {
				case <-p.Done():
					break wait
				case <-deadline:
					t.Fatal("Done not closed 5s after start")
				case <-time.After(10 * time.Millisecond):
					rec.record(p.Members())
				}
			}
			var exit *ExitError
			if !errors.As(p.Err(), &exit) {
				t.Fatalf("Err = %v (%T), want an *ExitError", p.Err(), p.Err())
			}
			if exit.Crashed() != tt.crashed || exit.Status != tt.status || exit.PID != p.PID() {
				t.Errorf("exit: crashed %v, status %+v, pid %d; want %v, %+v, pid %d",
					exit.Crashed(), exit.Status, exit.PID, tt.crashed, tt.status, p.PID())
			}
			if !strings.Contains(exit.Error(), tt.tail) {
				t.Errorf("Err does not show the log tail %q:\n%v", tt.tail, exit)
			}
			if strings.Count(exit.Error(), "\n") == 0 {
				t.Errorf("Err has no tail lines:\n%v", exit)
			}
			t.Logf("Err:\n%v", exit)
			if err := p.Stop(); err != nil {
				t.Errorf("Stop after the exit = %v", err)
			}
			rec.assertGone(t)
		})
	}
}

func TestStartFailures(t *testing.T) {
	busy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer busy.Close()

	tests := []struct {
		name    string
		spec    func(t *testing.T, marker string) Spec
		cancel  time.Duration // cancel the context after this long; 0: never
		failure StartFailure
		is      error  // errors.Is target, if any
		message string // in Error()
		check   func(t *testing.T, err *StartError)
	}{
		{
			name: "probe times out",
			spec: func(t *testing.T, marker string) Spec {
				return Spec{Argv: []string{"sleep", marker}, Ready: fmt.Sprintf("tcp://127.0.0.1:%d", freePort(t)), ReadyTimeout: 500 * time.Millisecond}
			},
			failure: NotReady, message: "connection refused",
			check: func(t *testing.T, err *StartError) {
				if err.Waited < 500*time.Millisecond || err.Waited > 3*time.Second {
					t.Errorf("waited %v for a 500ms timeout", err.Waited)
				}
			},
		},
		{
			name: "http probe answers 500",
			spec: func(t *testing.T, marker string) Spec {
				port := freePort(t)
				return Spec{
					Argv: []string{testBinary(t), marker},
					Env:  map[string]string{roleEnv: "http", portEnv: strconv.Itoa(port), statusEnv: "500"},
					// Long enough for the child to start on a busy machine,
					// so that the probe sees the 500 and not a refusal.
					Ready: fmt.Sprintf("http://127.0.0.1:%d/health", port), ReadyTimeout: 5 * time.Second,
				}
			},
			failure: NotReady, message: "status 500",
		},
		{
			name: "exits before ready",
			spec: func(t *testing.T, marker string) Spec {
				return Spec{
					Shell: "echo 'config error at line 3' >&2; exit 2 # " + marker,
					Ready: fmt.Sprintf("tcp://127.0.0.1:%d", freePort(t)),
				}
			},
			failure: ExitedEarly, message: "config error at line 3",
			check: func(t *testing.T, err *StartError) {
				var exit *ExitError
				if !errors.As(err, &exit) || exit.Status.Code != 2 {
					t.Errorf("cause = %v, want an *ExitError with status 2", err.Err)
				}
			},
		},
		{
			name: "cancelled while waiting",
			spec: func(t *testing.T, marker string) Spec {
				return Spec{Argv: []string{"sleep", marker}, Ready: fmt.Sprintf("tcp://127.0.0.1:%d", freePort(t))}
			},
			cancel: 300 * time.Millisecond, failure: Canceled, is: context.Canceled,
		},
		{
			name: "address already in use",
			spec: func(t *testing.T, marker string) Spec {
				return Spec{Argv: []string{"sleep", marker}, Ready: busy.URL}
			},
			failure: AddressInUse, message: "another server is listening",
		},
		{
			name: "program not found",
			spec: func(t *testing.T, marker string) Spec {
				return Spec{Argv: []string{"/nonexistent/" + marker}}
			},
			failure: FailedSpawn, is: os.ErrNotExist,
		},
		{
			name: "file cannot be written",
			spec: func(t *testing.T, marker string) Spec {
				return Spec{Argv: []string{"sleep", marker}, Files: []File{{Path: "/dev/null/" + marker}}}
			},
			failure: FailedFiles, message: "writing /dev/null/",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			marker := uniqueSleep()
			spec := tt.spec(t, marker)
			spec.SampleInterval = fastSampling
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if tt.cancel > 0 {
				time.AfterFunc(tt.cancel, cancel)
			}
			p, err := Start(ctx, spec)
			if err == nil {
				p.Stop()
				t.Fatal("Start succeeded")
			}
			var se *StartError
			if !errors.As(err, &se) {
				t.Fatalf("error %v (%T) is not a *StartError", err, err)
			}
			if se.Failure != tt.failure {
				t.Errorf("failure = %v, want %v; error: %v", se.Failure, tt.failure, err)
			}
			if tt.is != nil && !errors.Is(err, tt.is) {
				t.Errorf("error %v is not %v", err, tt.is)
			}
			if !strings.Contains(err.Error(), tt.message) {
				t.Errorf("error does not mention %q:\n%v", tt.message, err)
			}
			if tt.check != nil {
				tt.check(t, se)
			}
			// The log the error points to is there to read.
			if se.LogPath != "" && strings.Contains(err.Error(), se.LogPath) {
				if _, err := os.Stat(se.LogPath); err != nil {
					t.Errorf("the error points to the log, which is gone: %v", err)
				}
			}
			t.Logf("error:\n%v", err)
			assertNoProcessWith(t, marker)
		})
	}
}

func TestTemporaryLogRemoved(t *testing.T) {
	p, err := Start(context.Background(), Spec{Shell: "echo hello; sleep " + uniqueSleep(), SampleInterval: fastSampling})
	if err != nil {
		t.Fatal(err)
	}
	path := p.LogPath()
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("temporary log: %v", err)
	}
	if err := p.Stop(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("temporary log %s still there after Stop (%v)", path, err)
	}
}

func TestFilesWrittenBeforeStart(t *testing.T) {
	dir := t.TempDir()
	p, err := Start(context.Background(), Spec{
		Shell: "cat conf/app.cfg; ls -l secret | cut -c1-10; sleep " + uniqueSleep(),
		Dir:   dir,
		Files: []File{
			{Path: "conf/app.cfg", Content: []byte("threads 5\n")},
			{Path: filepath.Join(dir, "secret"), Content: []byte("x"), Mode: 0o600},
		},
		Env:            map[string]string{"LOADLAB_TEST_VAR": "from-spec"},
		LogPath:        filepath.Join(dir, "server.log"),
		SampleInterval: fastSampling,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Stop()
	deadline := time.Now().Add(5 * time.Second)
	for {
		log, _ := os.ReadFile(p.LogPath())
		if strings.Contains(string(log), "threads 5") && strings.Contains(string(log), "-rw-------") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("log does not show the files:\n%s", log)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestMemoryAgreesWithKernel has a child map and touch 200 MiB, and expects RSS and PSS
// to grow by that much, within 5%.
func TestMemoryAgreesWithKernel(t *testing.T) {
	if testing.Short() {
		t.Skip("slow (over a second): skipped with -short")
	}
	const mib = 1 << 20
	const want = 200 * mib
	port := freePort(t)
	p, err := Start(context.Background(), Spec{
		Argv:           []string{testBinary(t)},
		Env:            map[string]string{roleEnv: "http", portEnv: strconv.Itoa(port)},
		Ready:          fmt.Sprintf("http://127.0.0.1:%d/", port),
		MemoryQuota:    100 * mib,
		SampleInterval: fastSampling,
		LogPath:        filepath.Join(t.TempDir(), "server.log"),
	})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Stop()
	settle := func() Sample {
		time.Sleep(3 * fastSampling)
		s := p.Samples()
		return s[len(s)-1]
	}
	before := settle()
	resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/alloc?mib=%d", port, want/mib))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("alloc: %s", resp.Status)
	}
	after := settle()
	for _, fig := range []struct {
		name          string
		before, after int64
	}{{"RSS", before.RSS, after.RSS}, {"PSS", before.PSS, after.PSS}} {
		grew := fig.after - fig.before
		t.Logf("%s %d MiB -> %d MiB: grew %.1f MiB", fig.name, fig.before/mib, fig.after/mib, float64(grew)/mib)
		if float64(grew) < 0.95*want || float64(grew) > 1.05*want {
			t.Errorf("%s grew by %.1f MiB, want 200 MiB ± 5%%", fig.name, float64(grew)/mib)
		}
	}
	if after.PSSFromRSS {
		t.Error("PSS fell back to RSS although smaps_rollup is readable")
	}
	if after.Processes != 1 || after.Threads < 2 || after.FDs < 3 {
		t.Errorf("sample %+v: want 1 process, Go's threads, a few fds", after)
	}
	sum := p.Summary(time.Time{}, time.Time{})
	if !sum.Quota.PeakExceeded || sum.Quota.PeakOver != sum.PSSPeak-100*mib || sum.PSSPeak < after.PSS {
		t.Errorf("quota check %+v against peak PSS %d", sum.Quota, sum.PSSPeak)
	}
}

// TestCPUOneCore has a child spin one core until it has used one second of CPU. The
// samples must add up to that second, and the busiest interval must show the share of a
// core the child got, which the child reports itself: on an idle machine 100%, on a
// shared one less.
func TestCPUOneCore(t *testing.T) {
	if testing.Short() {
		t.Skip("slow (over a second): skipped with -short")
	}
	p, err := Start(context.Background(), Spec{
		Argv:           []string{testBinary(t)},
		Env:            map[string]string{roleEnv: "spin"},
		SampleInterval: 100 * time.Millisecond,
		LogPath:        filepath.Join(t.TempDir(), "server.log"),
	})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Stop()
	var childCPU, childWall time.Duration
	deadline := time.Now().Add(10 * time.Second)
	for {
		log, _ := os.ReadFile(p.LogPath())
		if _, after, ok := strings.Cut(string(log), "spun "); ok {
			if _, err := fmt.Sscanf(after, "cpu=%d wall=%d", &childCPU, &childWall); err != nil {
				t.Fatalf("child report %q: %v", after, err)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the child did not finish spinning:\n%s", log)
		}
		time.Sleep(50 * time.Millisecond)
	}
	time.Sleep(250 * time.Millisecond) // samples after the spin
	share := 100 * childCPU.Seconds() / childWall.Seconds()
	sum := p.Summary(time.Time{}, time.Time{})
	cpu := sum.User + sum.System
	t.Logf("child: %v CPU in %v (%.0f%% of a core); sampled: %v CPU, peak %.0f%% of a core (%.0f%% of %.1f CPUs)",
		childCPU, childWall.Round(time.Millisecond), share, cpu, sum.CPUPeak, sum.MachinePeak, sum.Capacity)
	if cpu < childCPU-20*time.Millisecond || cpu > childCPU+300*time.Millisecond { // ticks; + the Go runtime's start
		t.Errorf("sampled CPU time %v, want the child's %v plus its start-up", cpu, childCPU)
	}
	// A peak is never below the average; above, one interval of a busy
	// machine may still get the whole core, plus a tick of rounding.
	if sum.CPUPeak < 0.7*share || sum.CPUPeak > max(1.5*share+10, 125) {
		t.Errorf("CPU peak %.0f%% of a core, want about the child's %.0f%%", sum.CPUPeak, share)
	}
	if !near(sum.MachinePeak*sum.Capacity, sum.CPUPeak, 1e-6) {
		t.Errorf("machine peak %.1f%% × %.1f CPUs != core peak %.1f%%", sum.MachinePeak, sum.Capacity, sum.CPUPeak)
	}
	// Sub-windows: the busiest 500 ms must average about the child's share.
	samples := p.Samples()
	best := 0.0
	for i := 0; i+5 < len(samples); i++ {
		best = max(best, p.Summary(samples[i].Time, samples[i+5].Time).CPUAverage)
	}
	if best < 0.7*share || best > max(1.3*share+10, 110) {
		t.Errorf("busiest 500ms averaged %.0f%% of a core, want about the child's %.0f%%", best, share)
	}
}

func TestReadyStatuses(t *testing.T) {
	if testing.Short() {
		t.Skip("slow (over a second): skipped with -short")
	}
	tests := []struct {
		status int
		ready  bool
	}{{200, true}, {204, true}, {302, true}, {404, false}, {503, false}}
	for _, tt := range tests {
		t.Run(strconv.Itoa(tt.status), func(t *testing.T) {
			// A server that will be ready gets time to start on a busy
			// machine (it costs nothing when it is quick); one that will not
			// is given up on sooner.
			readyTimeout := 10 * time.Second
			if !tt.ready {
				readyTimeout = 700 * time.Millisecond
			}
			port := freePort(t)
			p, err := Start(context.Background(), Spec{
				Argv:           []string{testBinary(t)},
				Env:            map[string]string{roleEnv: "http", portEnv: strconv.Itoa(port), statusEnv: strconv.Itoa(tt.status)},
				Ready:          fmt.Sprintf("http://127.0.0.1:%d/", port),
				ReadyTimeout:   readyTimeout,
				SampleInterval: fastSampling,
			})
			if tt.ready != (err == nil) {
				t.Fatalf("status %d: Start error = %v, want ready %v", tt.status, err, tt.ready)
			}
			if err == nil {
				if p.ReadyAt().Before(p.StartedAt()) {
					t.Errorf("ReadyAt %v before StartedAt %v", p.ReadyAt(), p.StartedAt())
				}
				if err := p.Stop(); err != nil {
					t.Error(err)
				}
			}
		})
	}
}

func TestScanAndChildrenAgree(t *testing.T) {
	if !childrenFileWorks() {
		t.Skip("no /proc/PID/task/TID/children on this kernel: only the scan can be used")
	}
	p, err := Start(context.Background(), Spec{
		Shell:          fmt.Sprintf("sleep %[1]s & (sleep %[1]s & wait) & setsid sh -c 'sleep %[1]s >/dev/null 2>&1 &'; wait", uniqueSleep()),
		SampleInterval: fastSampling,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Stop()
	rec := newRecorder()
	rec.await(t, p, "5 processes, 3 of them sleeping", 5*time.Second, func(m []Member) bool {
		return len(m) == 5 && countNamed(m, "sleep") == 3
	})
	st, err := newProcReader().stat(p.PID())
	if err != nil {
		t.Fatal(err)
	}
	opt := treeOptions{root: p.PID(), rootStart: st.start, group: p.PID(), claimOrphans: true}
	var got [2]string
	var tr0 *tree
	for i, scan := range []bool{false, true} {
		tr := newTree(opt, scan)
		if i == 0 {
			tr0 = tr
		}
		if _, err := tr.collect(); err != nil {
			t.Fatal(err)
		}
		got[i] = describe(tr.members(nil))
	}
	if got[0] != got[1] {
		t.Errorf("children walk found %s\nfull scan found %s", got[0], got[1])
	}
	pids := func(members []Member) string {
		var out []string
		for _, m := range members {
			out = append(out, strconv.Itoa(m.PID))
		}
		return strings.Join(out, " ")
	}
	if walk, monitor := pids(tr0.members(nil)), pids(p.Members()); walk != monitor {
		t.Errorf("fresh walk found %s, the monitor %s", walk, monitor)
	}
}

func TestSamplers(t *testing.T) {
	self, err := SampleSelf()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if err := self.Run(ctx, 20*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	samples := self.Samples()
	last := samples[len(samples)-1]
	if len(samples) < 3 || last.Processes != 1 || last.RSS <= 0 || last.PSS <= 0 || last.Threads < 2 || last.FDs < 3 {
		t.Errorf("%d samples of self, last %+v", len(samples), last)
	}

	// A tree this test did not start through Start.
	p, err := Start(context.Background(), Spec{
		Shell:          fmt.Sprintf("sleep %[1]s & sleep %[1]s & wait", uniqueSleep()),
		SampleInterval: fastSampling,
	})
	if err != nil {
		t.Fatal(err)
	}
	rec := newRecorder()
	rec.await(t, p, "3 processes", 5*time.Second, func(m []Member) bool { return len(m) == 3 })
	for _, tt := range []struct {
		scope Scope
		want  int
	}{{OneProcess, 1}, {ProcessTree, 3}} {
		s, err := NewSampler(p.PID(), tt.scope)
		if err != nil {
			t.Fatal(err)
		}
		sample, err := s.Sample()
		if err != nil || sample.Processes != tt.want {
			t.Errorf("scope %d: %d processes (%v), want %d", tt.scope, sample.Processes, err, tt.want)
		}
	}
	gone, err := NewSampler(p.PID(), ProcessTree)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Stop(); err != nil {
		t.Fatal(err)
	}
	var ge *GoneError
	if _, err := gone.Sample(); !errors.As(err, &ge) {
		t.Errorf("sampling a stopped tree: %v, want a *GoneError", err)
	}
	rec.assertGone(t)
	if _, err := NewSampler(p.PID(), ProcessTree); err == nil {
		t.Error("NewSampler of a gone pid succeeded")
	}
}

// TestPSSCarriedBetweenReads makes smaps_rollup reads as rare as they get, then checks
// that a PSS carried forward by RSS agrees with the next real read.
func TestPSSCarriedBetweenReads(t *testing.T) {
	const mib = 1 << 20
	port, tr := httpTree(t)
	tr.rollupBudget = time.Nanosecond // any read is over budget: the next ones are skipped
	tr.rollupDrift = 1 << 40          // nor is growth a reason to read again
	first, err := tr.collect()
	if err != nil || first.pssEstimated {
		t.Fatalf("first collection: %+v, %v", first, err)
	}
	get(t, fmt.Sprintf("http://127.0.0.1:%d/alloc?mib=64", port))
	carried, err := tr.collect()
	if err != nil || !carried.pssEstimated {
		t.Fatalf("second collection not carried: %+v, %v", carried, err)
	}
	tr.rollupIn = 0
	read, err := tr.collect()
	if err != nil || read.pssEstimated {
		t.Fatalf("third collection not read: %+v, %v", read, err)
	}
	t.Logf("PSS %d MiB, carried %.1f MiB, read %.1f MiB", first.pss/mib, float64(carried.pss)/mib, float64(read.pss)/mib)
	if grew := carried.pss - first.pss; grew < 63*mib || grew > 66*mib {
		t.Errorf("carried PSS grew %.1f MiB, want 64", float64(grew)/mib)
	}
	if diff := carried.pss - read.pss; diff < -mib || diff > mib {
		t.Errorf("carried PSS %d and read PSS %d differ by more than 1 MiB", carried.pss, read.pss)
	}
}

// TestPSSReadAgainAfterGrowth makes smaps_rollup reads as rare as they get, as
// on a busy machine, and checks that a member whose RSS grew past the drift
// bound is read again rather than carried: a server read while it starts and
// carried from there read 5 to 12 MiB too high for a whole run (see
// rereadShift). Still, one that holds still is carried.
func TestPSSReadAgainAfterGrowth(t *testing.T) {
	const mib = 1 << 20
	port, tr := httpTree(t)
	tr.rollupBudget = time.Nanosecond // any read is over budget: the next round waits
	first, err := tr.collect()
	if err != nil || first.pssEstimated {
		t.Fatalf("first collection: %+v, %v", first, err)
	}
	get(t, fmt.Sprintf("http://127.0.0.1:%d/alloc?mib=64", port))
	grown, err := tr.collect()
	if err != nil || grown.pssEstimated {
		t.Fatalf("a member 64 MiB larger was carried, not read: %+v, %v", grown, err)
	}
	if g := grown.pss - first.pss; g < 63*mib || g > 66*mib {
		t.Errorf("PSS grew %.1f MiB, want 64", float64(g)/mib)
	}
	still, err := tr.collect()
	if err != nil || !still.pssEstimated || still.pss != grown.pss+still.rss-grown.rss {
		t.Errorf("a member that held still was read again, or carried wrong: %+v after %+v, %v", still, grown, err)
	}
}

// httpTree starts the test binary's HTTP server, stopped when the test
// ends, and a tree of its processes that the test collects by itself.
func httpTree(t *testing.T) (port int, tr *tree) {
	t.Helper()
	port = freePort(t)
	p, err := Start(context.Background(), Spec{
		Argv:           []string{testBinary(t)},
		Env:            map[string]string{roleEnv: "http", portEnv: strconv.Itoa(port)},
		Ready:          fmt.Sprintf("http://127.0.0.1:%d/", port),
		SampleInterval: time.Hour, // the test collects by itself
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Stop() })
	st, err := newProcReader().stat(p.PID())
	if err != nil {
		t.Fatal(err)
	}
	return port, newTree(treeOptions{root: p.PID(), rootStart: st.start}, false)
}
