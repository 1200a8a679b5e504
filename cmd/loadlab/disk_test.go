package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/loadlab/loadlab/internal/experiment"
	"github.com/loadlab/loadlab/internal/history"
	"github.com/loadlab/loadlab/internal/result"
	"github.com/loadlab/loadlab/internal/target"
	"github.com/loadlab/loadlab/internal/target/targettest"
)

// TestFullDisk fills the disk under loadlab, on small tmpfs mounts in a
// user and mount namespace of the test's own. A single run whose reports no
// longer fit keeps its result.json, leaves no half-written file and says so
// in one line. An experiment whose disk fills after its first run stops,
// keeps that run, and once space is freed the same command resumes and ends
// with every run done exactly once.
func TestFullDisk(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("two experiments of a few 1 s runs")
	}
	if out, err := exec.Command("unshare", "-rm", "true").CombinedOutput(); err != nil {
		t.Skipf("no user namespace to mount a small tmpfs in: %v %s", err, out)
	}
	url := targettest.Start(t, target.Options{Delay: time.Millisecond})
	plan, marker := sweepPlan(t, 1, "")
	work := t.TempDir()
	script := `
set -u
L="$LOADLAB"; W="$WORK"
mkdir -p $W/q $W/e
# A single run: room for result.json, not for the reports.
mount -t tmpfs -o size=24k tmpfs $W/q
$L run --url "$URL/" -d 1s -c 2 --out $W/q/run > $W/quick.out 2> $W/quick.err
echo $? > $W/quick.code
ls -a $W/q/run > $W/quick.ls
cp $W/q/run/result.json $W/quick.json
# An experiment: the disk fills once its first run is kept.
mount -t tmpfs -o size=8m tmpfs $W/e
$L run "$PLAN" --out $W/e/exp > $W/first.out 2> $W/first.err &
pid=$!
i=0; while [ ! -d $W/e/exp/runs/002 ] && [ $i -lt 600 ]; do sleep 0.05; i=$((i+1)); done
dd if=/dev/zero of=$W/e/fill bs=4k 2>/dev/null
wait $pid; echo $? > $W/first.code
rm $W/e/fill
$L run "$PLAN" --out $W/e/exp > $W/second.out 2> $W/second.err
echo $? > $W/second.code
cp $W/e/exp/experiment.json $W/experiment.json
`
	cmd := exec.Command("unshare", "-rm", "sh", "-c", script)
	cmd.Env = append(os.Environ(), "LOADLAB_TEST_MAIN=1", "LOADLAB="+os.Args[0], "WORK="+work, "URL="+url, "PLAN="+plan)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	noOrphans(t, marker)
	read := func(name string) string {
		b, _ := os.ReadFile(filepath.Join(work, name))
		return strings.TrimSpace(string(b))
	}

	stderr := read("quick.err")
	if read("quick.code") != "1" || !strings.Contains(stderr, "result.json is written, but could not write report.html") ||
		!strings.Contains(stderr, "no space left on device") || strings.Count(stderr, "\n") > 0 {
		t.Errorf("single run: exit %s, stderr %q; want 1 and one line saying what was written", read("quick.code"), stderr)
	}
	if !strings.Contains(read("quick.out"), "requests in") {
		t.Errorf("single run: no summary on stdout:\n%s", read("quick.out"))
	}
	var r result.Result
	if err := json.Unmarshal([]byte(read("quick.json")), &r); err != nil || r.Summary.Requests == 0 {
		t.Errorf("single run: result.json %v, %d requests", err, r.Summary.Requests)
	}
	if ls := read("quick.ls"); strings.Contains(ls, ".tmp-") {
		t.Errorf("single run: half-written files left:\n%s", ls)
	}

	first := read("first.err")
	if read("first.code") != "1" || !strings.Contains(first, "no space left on device") || !strings.Contains(first, "run the same command again to resume") {
		t.Errorf("experiment on a full disk: exit %s, stderr:\n%s", read("first.code"), first)
	}
	if read("second.code") != "0" {
		t.Fatalf("resumed experiment: exit %s:\n%s", read("second.code"), read("second.err"))
	}
	var o experiment.Outcome
	if err := json.Unmarshal([]byte(read("experiment.json")), &o); err != nil {
		t.Fatal(err)
	}
	seen := map[int]int{}
	for _, run := range o.Runs {
		seen[run.Index]++
	}
	skipped := strings.Count(read("second.err"), "done before, skipped")
	if !o.Complete || len(o.Runs) != 6 || len(seen) != 6 || skipped < 1 {
		t.Errorf("complete %v, %d runs (%d distinct), %d kept from before the disk filled; want 6 runs once each and at least one kept",
			o.Complete, len(o.Runs), len(seen), skipped)
	}
	t.Logf("kept %d runs from before the disk filled", skipped)
}

// TestHistoryFullDisk: the history's disk fills between two runs (a small
// tmpfs in a user and mount namespace of the test's own). The second run
// still writes its own result.json (elsewhere) and exits as it would, and
// says in one line that its run is not in the history and why; the history
// keeps its earlier record, whole, and takes the next run's once there is
// room again.
func TestHistoryFullDisk(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("three 1 s runs")
	}
	if out, err := exec.Command("unshare", "-rm", "true").CombinedOutput(); err != nil {
		t.Skipf("no user namespace to mount a small tmpfs in: %v %s", err, out)
	}
	url := targettest.Start(t, target.Options{Delay: time.Millisecond})
	work := t.TempDir()
	script := `
set -u
L="$LOADLAB"; W="$WORK"
mkdir -p $W/h $W/copy
mount -t tmpfs -o size=1m tmpfs $W/h
$L run --url "$URL/" -d 1s -c 1 --history $W/h/history.db > $W/first.out 2> $W/first.err
echo $? > $W/first.code
dd if=/dev/zero of=$W/h/fill bs=4k 2>/dev/null
$L run --url "$URL/" -d 1s -c 1 --out $W/out --history $W/h/history.db > $W/full.out 2> $W/full.err
echo $? > $W/full.code
cp -a $W/h/. $W/copy/full
rm $W/h/fill
$L run --url "$URL/" -d 1s -c 1 --history $W/h/history.db > $W/third.out 2> $W/third.err
echo $? > $W/third.code
rm -f $W/h/fill
cp -a $W/h/. $W/copy/after
`
	cmd := exec.Command("unshare", "-rm", "sh", "-c", script)
	cmd.Env = append(os.Environ(), "LOADLAB_TEST_MAIN=1", "LOADLAB="+os.Args[0], "WORK="+work, "URL="+url)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	read := func(name string) string {
		b, _ := os.ReadFile(filepath.Join(work, name))
		return strings.TrimSpace(string(b))
	}
	for _, run := range []string{"first", "third"} {
		if read(run+".code") != "0" || read(run+".err") != "" {
			t.Errorf("%s run: exit %s, stderr %q", run, read(run+".code"), read(run+".err"))
		}
	}
	stderr := read("full.err")
	if read("full.code") != "0" || !strings.Contains(stderr, "the run is not in the history") || !strings.Contains(stderr, "is its disk full?") || strings.Count(stderr, "\n") > 0 {
		t.Errorf("run on a full disk: exit %s, stderr %q; want 0 and one line saying the run is not in the history", read("full.code"), stderr)
	}
	t.Logf("on a full disk: %s", stderr)
	var r result.Result
	if err := json.Unmarshal([]byte(read("out/result.json")), &r); err != nil || r.Summary.Requests == 0 {
		t.Errorf("run on a full disk: result.json %v, %d requests", err, r.Summary.Requests)
	}
	for copy, want := range map[string]int{"full": 1, "after": 2} {
		db, err := history.Open(filepath.Join(work, "copy", copy, "history.db"))
		if err != nil {
			t.Fatalf("%s: %v", copy, err)
		}
		if err := db.IntegrityCheck(); err != nil {
			t.Errorf("%s: integrity_check: %v", copy, err)
		}
		recs, err := db.Runs(history.Query{})
		db.Close()
		if err != nil || len(recs) != want {
			t.Errorf("%s: %d records, %v; want %d", copy, len(recs), err, want)
		}
		for _, rec := range recs {
			if rec.Result == nil || rec.Result.Summary.Requests == 0 {
				t.Errorf("%s: a record without its figures: %+v", copy, rec)
			}
		}
	}
}
