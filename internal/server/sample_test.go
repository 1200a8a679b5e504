package server

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestSummarize(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	const mib = 1 << 20
	// Four intervals of 250 ms: a warmup at 200% of a core, then 100%, 100%, 20%.
	var samples []Sample
	s := newSeries(2, 300*mib)
	for i, u := range []usage{
		{user: 0, rss: 100 * mib, pss: 80 * mib, processes: 1, threads: 2, fds: 5},
		{user: 400 * time.Millisecond, system: 100 * time.Millisecond, rss: 400 * mib, pss: 350 * mib, processes: 4, threads: 8, fds: 9, majorFaults: 3},
		{user: 600 * time.Millisecond, system: 150 * time.Millisecond, rss: 300 * mib, pss: 250 * mib, processes: 4, threads: 8, fds: 20, majorFaults: 4, swap: mib},
		{user: 800 * time.Millisecond, system: 200 * time.Millisecond, rss: 300 * mib, pss: 250 * mib, processes: 4, threads: 9, fds: 20, majorFaults: 4},
		{user: 850 * time.Millisecond, system: 200 * time.Millisecond, rss: 200 * mib, pss: 150 * mib, processes: 3, threads: 6, fds: 8, majorFaults: 10, pssFromRSS: true},
	} {
		samples = append(samples, s.add(at(250*i), u))
	}
	if got := samples[1].CPU; !near(got, 200, 1e-9) {
		t.Fatalf("sample 1 CPU = %v, want 200", got)
	}
	if got := samples[1].MachineCPU; !near(got, 100, 1e-9) {
		t.Fatalf("sample 1 MachineCPU = %v, want 100 (capacity 2)", got)
	}

	tests := []struct {
		name     string
		from, to time.Time
		want     Summary
	}{
		{
			name: "whole run",
			want: Summary{
				From: at(0), To: at(1000), Samples: 5,
				User: 850 * time.Millisecond, System: 200 * time.Millisecond,
				CPUAverage: 105, CPUPeak: 200, MachineAverage: 52.5, MachinePeak: 100, Capacity: 2,
				RSSAverage: 260 * mib, RSSPeak: 400 * mib, PSSAverage: 216 * mib, PSSPeak: 350 * mib,
				PSSFromRSS: true, SwapPeak: mib, MajorFaults: 10, ThreadsPeak: 9, FDsPeak: 20, ProcessesPeak: 4,
				Quota: QuotaCheck{Quota: 300 * mib, Peak: 350 * mib, Average: 216 * mib, PeakExceeded: true, PeakOver: 50 * mib},
			},
		},
		{
			name: "warmup left out",
			from: at(250), to: at(750),
			want: Summary{
				From: at(250), To: at(750), Samples: 3,
				User: 400 * time.Millisecond, System: 100 * time.Millisecond,
				CPUAverage: 100, CPUPeak: 100, MachineAverage: 50, MachinePeak: 50, Capacity: 2,
				RSSAverage: 333 * mib, RSSPeak: 400 * mib, PSSAverage: 283 * mib, PSSPeak: 350 * mib,
				SwapPeak: mib, MajorFaults: 1, ThreadsPeak: 9, FDsPeak: 20, ProcessesPeak: 4,
				Quota: QuotaCheck{Quota: 300 * mib, Peak: 350 * mib, Average: 283 * mib, PeakExceeded: true, PeakOver: 50 * mib},
			},
		},
		{
			name: "open start, one sample",
			to:   at(100),
			want: Summary{
				From: at(0), To: at(0), Samples: 1, Capacity: 2,
				RSSAverage: 100 * mib, RSSPeak: 100 * mib, PSSAverage: 80 * mib, PSSPeak: 80 * mib,
				ThreadsPeak: 2, FDsPeak: 5, ProcessesPeak: 1,
				Quota: QuotaCheck{Quota: 300 * mib, Peak: 80 * mib, Average: 80 * mib},
			},
		},
		{
			name: "empty window",
			from: at(2000),
			want: Summary{Capacity: 2, Quota: QuotaCheck{Quota: 300 * mib}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := s.summary(tt.from, tt.to)
			// Averages of MiB figures are rounded to whole MiB for the comparison.
			got.RSSAverage = got.RSSAverage / mib * mib
			got.PSSAverage = got.PSSAverage / mib * mib
			got.Quota.Average = got.Quota.Average / mib * mib
			if !near(got.CPUAverage, tt.want.CPUAverage, 1e-9) || !near(got.MachineAverage, tt.want.MachineAverage, 1e-9) {
				t.Errorf("CPU average = %v (machine %v), want %v (%v)",
					got.CPUAverage, got.MachineAverage, tt.want.CPUAverage, tt.want.MachineAverage)
			}
			got.CPUAverage, got.MachineAverage = tt.want.CPUAverage, tt.want.MachineAverage
			if got != tt.want {
				t.Errorf("summary =\n%+v\nwant\n%+v", got, tt.want)
			}
		})
	}
}

// TestQuotaAverageExceeded: the quota counts PSS and swap, as a platform's
// memory alarm counts RAM and swap: a server pushed into swap is still over.
func TestQuotaAverageExceeded(t *testing.T) {
	s := newSeries(1, 100)
	s.add(time.Unix(0, 0), usage{pss: 150})
	s.add(time.Unix(1, 0), usage{pss: 90, swap: 160})
	q := s.summary(time.Time{}, time.Time{}).Quota
	want := QuotaCheck{Quota: 100, Peak: 250, Average: 200, PeakExceeded: true, PeakOver: 150, AverageExceeded: true, AverageOver: 100}
	if q != want {
		t.Errorf("quota = %+v, want %+v", q, want)
	}
}

func TestCPUPercentNeverNegative(t *testing.T) {
	prev := Sample{Time: time.Unix(0, 0), User: time.Second}
	cur := Sample{Time: time.Unix(1, 0), User: 900 * time.Millisecond}
	if got := cpuPercent(prev, cur); got != 0 {
		t.Errorf("cpuPercent with a negative delta = %v, want 0", got)
	}
}

func TestReadTail(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	var many strings.Builder
	for i := range 30 {
		many.WriteString(strings.Repeat("x", i) + "\n")
	}
	huge := strings.Repeat("y", 100<<10) + "\nlast\n"
	tests := []struct {
		name, content string
		want          []string
	}{
		{"empty", "", nil},
		{"no final newline", "a\nb", []string{"a", "b"}},
		{"crlf", "a\r\nb\r\n", []string{"a", "b"}},
		{"more than n", many.String(), func() []string {
			lines := strings.Split(strings.TrimSuffix(many.String(), "\n"), "\n")
			return lines[10:]
		}()},
		{"one huge line", huge, []string{"last"}},
		{"long line cut", strings.Repeat("z", 500), []string{strings.Repeat("z", 400) + "…"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := readTail(write(tt.name, tt.content), 20, nil)
			if strings.Join(got, "|") != strings.Join(tt.want, "|") || len(got) != len(tt.want) {
				t.Errorf("readTail = %q, want %q", got, tt.want)
			}
		})
	}
	if got := readTail(filepath.Join(dir, "missing"), 20, nil); got != nil {
		t.Errorf("readTail of a missing file = %q, want nil", got)
	}
}

func TestErrorMessages(t *testing.T) {
	exit := &ExitError{
		Command: "nginx -c x", PID: 42, Name: "nginx", Status: ExitStatus{Code: -1, Signal: 11, CoreDumped: true},
		After: 1500 * time.Millisecond, LogPath: "/r/server.log", LogTail: []string{"a", "b"},
	}
	want := "server crashed 1.5s after start: pid 42 (nginx) killed by signal 11 (segmentation fault), core dumped: nginx -c x\n" +
		"  last 2 lines of /r/server.log:\n  | a\n  | b"
	if got := exit.Error(); got != want {
		t.Errorf("ExitError =\n%s\nwant\n%s", got, want)
	}
	start := &StartError{Failure: ExitedEarly, Command: "nginx -c x", Err: exit, LogPath: "/r/server.log", LogTail: []string{"emerg"}}
	want = "server did not start: nginx -c x: ended before it was ready: crashed 1.5s after start: pid 42 (nginx) killed by signal 11 (segmentation fault), core dumped\n" +
		"  last 1 lines of /r/server.log:\n  | emerg"
	if got := start.Error(); got != want {
		t.Errorf("StartError =\n%s\nwant\n%s", got, want)
	}
}

func near(a, b, tolerance float64) bool {
	d := a - b
	return d <= tolerance && d >= -tolerance
}

// TestSeriesIsBounded: a run three times longer than the series keeps at
// full resolution holds at most maxSamples, and its summary keeps the exact
// peaks and averages; the CPU time misses at most the first folded sample's.
func TestSeriesIsBounded(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	const n = 3*maxSamples + 7
	s := newSeries(2, 1<<30)
	var raw []Sample
	for i := range n {
		// A saw of memory, a spike of CPU and threads now and then.
		u := usage{
			user:      time.Duration(i) * 100 * time.Millisecond,
			rss:       int64(100<<20 + (i%97)<<20),
			pss:       int64(80<<20 + (i%89)<<20),
			swap:      int64(i%1000) << 10,
			threads:   4 + i%13,
			fds:       10 + i%31,
			processes: 2 + i%3,
		}
		if i == n/2 {
			u.rss, u.user = 900<<20, u.user+time.Second // one spike: 1.1 s of CPU in 250 ms
		}
		if i > n/2 {
			u.user += time.Second
		}
		raw = append(raw, s.add(t0.Add(time.Duration(i)*250*time.Millisecond), u))
	}
	kept := s.all()
	if len(kept) > maxSamples || len(kept) < maxSamples/4 {
		t.Fatalf("%d samples kept of %d, want at most %d", len(kept), n, maxSamples)
	}
	got := s.summary(time.Time{}, time.Time{})
	want := summarize(raw, 2, 1<<30, time.Time{}, time.Time{})
	if got.Samples != n {
		t.Errorf("%d samples counted, want %d", got.Samples, n)
	}
	exact := []struct {
		name      string
		got, want int64
	}{
		{"RSS peak", got.RSSPeak, want.RSSPeak}, {"PSS peak", got.PSSPeak, want.PSSPeak}, {"swap peak", got.SwapPeak, want.SwapPeak},
		{"RSS average", got.RSSAverage, want.RSSAverage}, {"PSS average", got.PSSAverage, want.PSSAverage},
		{"quota peak", got.Quota.Peak, want.Quota.Peak}, {"quota average", got.Quota.Average, want.Quota.Average},
		{"threads peak", int64(got.ThreadsPeak), int64(want.ThreadsPeak)}, {"FDs peak", int64(got.FDsPeak), int64(want.FDsPeak)},
		{"processes peak", int64(got.ProcessesPeak), int64(want.ProcessesPeak)},
	}
	for _, e := range exact {
		if e.got != e.want {
			t.Errorf("%s: %d folded, %d from every sample", e.name, e.got, e.want)
		}
	}
	if got.CPUPeak != want.CPUPeak || !near(want.CPUPeak, 440, 1e-6) {
		t.Errorf("CPU peak %.0f%% folded, %.0f%% from every sample; the spike was 440%%", got.CPUPeak, want.CPUPeak)
	}
	span := time.Duration(n/len(kept)+1) * 100 * time.Millisecond
	if d := want.User - got.User; d < 0 || d > span {
		t.Errorf("CPU time %v folded, %v from every sample: may miss at most the first folded sample's %v", got.User, want.User, span)
	}
}
