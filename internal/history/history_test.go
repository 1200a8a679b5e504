package history

import (
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/loadlab/loadlab/internal/result"
)

// The test binary doubles as a writer process for the tests that need two
// processes or one to kill.
func TestMain(m *testing.M) {
	if path := os.Getenv("HISTORY_TEST_WRITER"); path != "" {
		n, _ := strconv.Atoi(os.Getenv("HISTORY_TEST_N"))
		db, err := Open(path)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		for i := range n {
			// Ten records a transaction, so a kill lands mid-transaction.
			var recs []Record
			for j := range 10 {
				recs = append(recs, record("writer-"+os.Getenv("HISTORY_TEST_NAME"), time.Now(), float64(i*10+j)))
			}
			if err := db.Add(recs...); err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(1)
			}
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func record(plan string, at time.Time, p95 float64) Record {
	r := &result.Result{Schema: "loadlab.result/v1", Name: plan}
	r.Summary.Latency.Count, r.Summary.Latency.P95, r.Summary.Responses, r.Summary.DurationS = 100, p95, 100, 1
	return Record{Time: at, Kind: KindRun, Plan: plan, PlanHash: "h1", Status: "done", Host: "test", Result: r}
}

func TestAddAndQuery(t *testing.T) {
	db, err := Open(filepath.Join(t.TempDir(), "sub", "history.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	a := record("shop", t0, 12.5)
	a.Git = Git{Commit: "abc", Branch: "main", Dirty: true}
	a.Result.Series = []result.Point{{}}
	a.Result.Plan = "name: shop\nsteps: []"
	b := record("other", t0.Add(time.Minute), 7)
	c := record("shop", t0.Add(2*time.Minute), 13)
	c.Branch = "feature"
	if err := db.Add(a, b, c); err != nil {
		t.Fatal(err)
	}
	got, err := db.Runs(Query{Plan: "shop"})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Commit != "abc" || !got[0].Dirty || got[0].Branch != "main" || got[0].Result.Summary.Latency.P95 != 12.5 || !got[0].Time.Equal(t0) {
		t.Fatalf("runs of shop: %+v", got)
	}
	if got[0].Result.Series != nil || got[0].Result.Plan != "" {
		t.Errorf("the record keeps the series or the plan text: %+v", got[0].Result)
	}
	if got, _ := db.Runs(Query{Plan: "shop", Branch: "feature"}); len(got) != 1 || got[0].Result.Summary.Latency.P95 != 13 {
		t.Errorf("branch feature: %+v", got)
	}
	if got, _ := db.Runs(Query{Since: t0.Add(30 * time.Second)}); len(got) != 2 {
		t.Errorf("since: %d runs", len(got))
	}
	plans, err := db.Plans()
	if err != nil || len(plans) != 2 || plans[0].Plan != "shop" || plans[0].Runs != 2 {
		t.Errorf("plans: %+v %v", plans, err)
	}
}

func writer(t *testing.T, path, name string, n int) *exec.Cmd {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "HISTORY_TEST_WRITER="+path, "HISTORY_TEST_N="+strconv.Itoa(n), "HISTORY_TEST_NAME="+name)
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return cmd
}

// TestTwoProcesses: two loadlab processes that record at once both get
// every record in.
func TestTwoProcesses(t *testing.T) {
	path := filepath.Join(t.TempDir(), "history.db")
	a, b := writer(t, path, "a", 50), writer(t, path, "b", 50)
	if err := a.Wait(); err != nil {
		t.Fatalf("writer a: %v", err)
	}
	if err := b.Wait(); err != nil {
		t.Fatalf("writer b: %v", err)
	}
	db, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, name := range []string{"a", "b"} {
		if got, err := db.Runs(Query{Plan: "writer-" + name}); err != nil || len(got) != 500 {
			t.Errorf("writer %s: %d records, %v; want 500", name, len(got), err)
		}
	}
}

// TestKill9MidWrite: a writer killed at random moments leaves a database
// that passes integrity_check and holds whole transactions only.
func TestKill9MidWrite(t *testing.T) {
	if testing.Short() {
		t.Skip("kills a writer a few times")
	}
	path := filepath.Join(t.TempDir(), "history.db")
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 6 {
		w := writer(t, path, "k", 1000000)
		time.Sleep(time.Duration(50+rng.IntN(250)) * time.Millisecond)
		w.Process.Signal(syscall.SIGKILL)
		w.Wait()
		db, err := Open(path)
		if err != nil {
			t.Fatalf("after kill %d: %v", i, err)
		}
		if err := db.IntegrityCheck(); err != nil {
			t.Fatalf("after kill %d: integrity_check: %v", i, err)
		}
		got, err := db.Runs(Query{Plan: "writer-k"})
		db.Close()
		if err != nil {
			t.Fatal(err)
		}
		if len(got)%10 != 0 {
			t.Fatalf("after kill %d: %d records, not whole transactions of 10", i, len(got))
		}
		t.Logf("after kill %d: %d records", i, len(got))
	}
}

func TestGitOf(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	dir := t.TempDir()
	if g := GitOf(dir); g != (Git{}) {
		t.Errorf("not a checkout: %+v", g)
	}
	run := func(args ...string) string {
		cmd := exec.Command("git", append([]string{"-C", dir, "-c", "user.name=t", "-c", "user.email=t@example.com"}, args...)...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v %s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	run("init", "-q", "-b", "trunk")
	os.WriteFile(filepath.Join(dir, "f"), []byte("1"), 0o644)
	run("add", "f")
	run("commit", "-q", "-m", "one")
	head := run("rev-parse", "HEAD")
	if g := GitOf(dir); g.Commit != head || g.Branch != "trunk" || g.Dirty {
		t.Errorf("clean checkout: %+v, want %s on trunk", g, head)
	}
	os.WriteFile(filepath.Join(dir, "f"), []byte("2"), 0o644)
	if g := GitOf(dir); !g.Dirty {
		t.Errorf("modified file: %+v, want dirty", g)
	}
	run("checkout", "-q", "--detach")
	t.Setenv("GITHUB_HEAD_REF", "")
	t.Setenv("GITHUB_REF_NAME", "pr-7")
	if g := GitOf(dir); g.Branch != "pr-7" {
		t.Errorf("detached HEAD in CI: %+v, want the branch from GITHUB_REF_NAME", g)
	}
}

func TestDefaultPath(t *testing.T) {
	t.Setenv(EnvPath, "off")
	if _, off, _ := DefaultPath(); !off {
		t.Error("LOADLAB_HISTORY=off does not turn history off")
	}
	t.Setenv(EnvPath, "/x/h.db")
	if p, off, _ := DefaultPath(); p != "/x/h.db" || off {
		t.Errorf("LOADLAB_HISTORY: %s %v", p, off)
	}
	t.Setenv(EnvPath, "")
	t.Setenv("XDG_DATA_HOME", "/data")
	if p, _, _ := DefaultPath(); p != filepath.Join("/data", "loadlab", "history.db") {
		t.Errorf("XDG_DATA_HOME: %s", p)
	}
}

// TestTrend: runs at commits, repeats grouped, a shift found at the commit
// that made it, and the plan's own change marked.
func TestTrend(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 5))
	var recs []Record
	t0 := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	for c := range 12 {
		level := 20.0
		if c >= 7 {
			level = 26 // commit 7 made p95 30% worse
		}
		for rep := range 2 {
			r := record("shop", t0.Add(time.Duration(c*10+rep)*time.Minute), level*(1+0.04*rng.NormFloat64()))
			r.Git = Git{Commit: fmt.Sprintf("c%02d", c), Branch: "main"}
			if c >= 10 {
				r.PlanHash = "h2"
			}
			recs = append(recs, r)
		}
	}
	failed := record("shop", t0.Add(time.Hour*10), 0)
	failed.Status = "failed"
	recs = append(recs, failed)
	tr, err := TrendOf(recs, "p95", "")
	if err != nil {
		t.Fatal(err)
	}
	if len(tr.Commits) != 12 || len(tr.Commits[0].Values) != 2 || tr.Skipped != 1 {
		t.Fatalf("%d commit groups, %d values in the first, %d skipped", len(tr.Commits), len(tr.Commits[0].Values), tr.Skipped)
	}
	if !tr.Commits[10].PlanChanged || tr.Commits[9].PlanChanged {
		t.Errorf("the plan's change at commit 10 is not marked alone")
	}
	if len(tr.Changes) != 1 || tr.Changes[0].Commit != "c07" || !tr.Changes[0].Worse || tr.Changes[0].Delta < 0.2 || tr.Changes[0].Delta > 0.4 {
		t.Fatalf("changes: %+v; want one, at c07, about +30%%, worse", tr.Changes)
	}
	if _, err := TrendOf(recs, "p96", ""); err == nil || !strings.Contains(err.Error(), "p95") {
		t.Errorf("unknown figure: %v", err)
	}
}
