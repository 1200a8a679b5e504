//go:build linux

package server

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// BenchmarkCollect measures one sample: finding the members and reading their figures.
// The monitor takes four a second by default, so the sampler's cost as a share of one
// core is 4 × cpu-ns/sample / 1e9 × 100, reported as %core@4Hz.
func BenchmarkCollect(b *testing.B) {
	p, err := Start(context.Background(), Spec{
		Shell:          fmt.Sprintf("sleep %[1]s & sleep %[1]s & sleep %[1]s & sleep %[1]s & wait", uniqueSleep()),
		SampleInterval: time.Hour, // the monitor must not compete with the benchmark
	})
	if err != nil {
		b.Fatal(err)
	}
	defer p.Stop()
	deadline := time.Now().Add(5 * time.Second)
	var root procStat
	for {
		tr := newTree(treeOptions{root: p.PID(), group: p.PID()}, false)
		if root, err = tr.r.stat(p.PID()); err != nil {
			b.Fatal(err)
		}
		tr.opt.rootStart = root.start
		if _, err := tr.collect(); err != nil {
			b.Fatal(err)
		}
		if len(tr.found) == 5 {
			break
		}
		if time.Now().After(deadline) {
			b.Fatalf("tree not up: %s", describe(tr.members(nil)))
		}
		time.Sleep(20 * time.Millisecond)
	}
	server := treeOptions{root: p.PID(), rootStart: root.start, group: p.PID(), claimOrphans: true}
	self, err := newProcReader().stat(os.Getpid())
	if err != nil {
		b.Fatal(err)
	}
	for _, bc := range []struct {
		name string
		opt  treeOptions
		scan bool
		want int
	}{
		{"server of 5 processes/children walk", server, false, 5},
		{"server of 5 processes/full scan", server, true, 5},
		{"loadlab itself", treeOptions{root: os.Getpid(), rootStart: self.start, single: true}, false, 1},
	} {
		b.Run(bc.name, func(b *testing.B) {
			tr := newTree(bc.opt, bc.scan)
			var before, after unix.Rusage
			unix.Getrusage(unix.RUSAGE_SELF, &before)
			for b.Loop() {
				u, err := tr.collect()
				if err != nil || u.processes != bc.want {
					b.Fatalf("collect: %d processes, %v", u.processes, err)
				}
			}
			unix.Getrusage(unix.RUSAGE_SELF, &after)
			cpu := float64(after.Utime.Nano()+after.Stime.Nano()-before.Utime.Nano()-before.Stime.Nano()) / float64(b.N)
			b.ReportMetric(cpu, "cpu-ns/sample")
			b.ReportMetric(4*cpu/1e9*100, "%core@4Hz")
		})
	}
}

// BenchmarkCollectLarge samples a server with 1 GiB resident, where smaps_rollup costs
// milliseconds: "every sample" reads it each time, "budgeted" as the monitor does.
func BenchmarkCollectLarge(b *testing.B) {
	port := freePort(b)
	p, err := Start(context.Background(), Spec{
		Argv:           []string{testBinary(b)},
		Env:            map[string]string{roleEnv: "http", portEnv: fmt.Sprint(port)},
		Ready:          fmt.Sprintf("http://127.0.0.1:%d/", port),
		SampleInterval: time.Hour,
	})
	if err != nil {
		b.Fatal(err)
	}
	defer p.Stop()
	resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/alloc?mib=1024", port))
	if err != nil {
		b.Fatal(err)
	}
	resp.Body.Close()
	st, err := newProcReader().stat(p.PID())
	if err != nil {
		b.Fatal(err)
	}
	for _, bc := range []struct {
		name   string
		budget time.Duration
	}{{"every sample", time.Hour}, {"budgeted", rollupBudget}} {
		b.Run(bc.name, func(b *testing.B) {
			tr := newTree(treeOptions{root: p.PID(), rootStart: st.start, group: p.PID(), claimOrphans: true}, false)
			tr.rollupBudget = bc.budget
			var before, after unix.Rusage
			unix.Getrusage(unix.RUSAGE_SELF, &before)
			for b.Loop() {
				if u, err := tr.collect(); err != nil || u.rss < 1<<30 {
					b.Fatalf("collect: RSS %d, %v", u.rss, err)
				}
			}
			unix.Getrusage(unix.RUSAGE_SELF, &after)
			cpu := float64(after.Utime.Nano()+after.Stime.Nano()-before.Utime.Nano()-before.Stime.Nano()) / float64(b.N)
			b.ReportMetric(cpu, "cpu-ns/sample")
			b.ReportMetric(4*cpu/1e9*100, "%core@4Hz")
		})
	}
}
