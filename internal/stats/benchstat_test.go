package stats

import (
	"encoding/csv"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// benchstatCommand builds the benchstat command of the golang.org/x/perf
// version in go.mod (from the module cache, as `go build` finds it) and
// returns its path.
func benchstatCommand(t *testing.T) string {
	t.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command to build benchstat with")
	}
	bin := filepath.Join(t.TempDir(), "benchstat")
	build := exec.Command(goBin, "build", "-o", bin, "golang.org/x/perf/cmd/benchstat")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build golang.org/x/perf/cmd/benchstat: %v\n%s", err, out)
	}
	return bin
}

// benchstatPair is one row for benchstat: base and test samples.
type benchstatPair struct {
	name       string
	base, test []float64
}

// runBenchstat runs benchstat -format csv on the pairs and returns, by
// name, its "vs base" and "P" cells joined as our Comparison.String writes
// them: "-8.91% (p=0.036 n=3+5)".
func runBenchstat(t *testing.T, bin string, pairs []benchstatPair) map[string]string {
	t.Helper()
	dir := t.TempDir()
	var old, new strings.Builder
	for _, p := range pairs {
		for _, v := range p.base {
			fmt.Fprintf(&old, "Benchmark%s 1 %v rps\n", p.name, v)
		}
		for _, v := range p.test {
			fmt.Fprintf(&new, "Benchmark%s 1 %v rps\n", p.name, v)
		}
	}
	a, b := filepath.Join(dir, "old.txt"), filepath.Join(dir, "new.txt")
	if err := os.WriteFile(a, []byte(old.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(b, []byte(new.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "-format", "csv", a, b)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("benchstat: %v\n%s", err, stderr.String())
	}
	r := csv.NewReader(strings.NewReader(string(out)))
	r.FieldsPerRecord = -1
	rows, err := r.ReadAll()
	if err != nil {
		t.Fatalf("benchstat's CSV: %v\n%s", err, out)
	}
	got := map[string]string{}
	for _, row := range rows {
		// name, old center, CI, new center, CI, vs base, P
		if len(row) < 7 || row[0] == "" || row[0] == "geomean" {
			continue
		}
		got[row[0]] = row[5] + " (" + row[6] + ")"
	}
	return got
}

// TestTestabilityMatchesBenchstat drives the real benchstat: for every
// size n1+n2 up to 10+10, samples that do not overlap at all (the most
// significant case there is) are significant to benchstat exactly when
// Testable says a difference can be, and every p-value, delta and
// significance we give equals benchstat's, for those samples and for noisy
// ones with ties. 3 runs against 5 can be significant (p=0.036); 3 against
// 4 cannot.
func TestTestabilityMatchesBenchstat(t *testing.T) {
	bin := benchstatCommand(t)
	var pairs []benchstatPair
	rng := rand.New(rand.NewPCG(11, 12))
	for n1 := 1; n1 <= 10; n1++ {
		for n2 := 1; n2 <= 10; n2++ {
			var base, test []float64
			for i := range n1 {
				base = append(base, 100+float64(i))
			}
			for i := range n2 {
				test = append(test, 90+float64(i)/2)
			}
			pairs = append(pairs, benchstatPair{fmt.Sprintf("Apart%dx%d", n1, n2), base, test})
			// Overlapping samples with ties (values rounded to integers).
			base, test = nil, nil
			for range n1 {
				base = append(base, float64(int(100+6*rng.NormFloat64())))
			}
			for range n2 {
				test = append(test, float64(int(96+6*rng.NormFloat64())))
			}
			pairs = append(pairs, benchstatPair{fmt.Sprintf("Noisy%dx%d", n1, n2), base, test})
		}
	}
	want := runBenchstat(t, bin, pairs)
	for _, p := range pairs {
		c := Compare(p.base, p.test, 0.05)
		w, ok := want[p.name]
		if !ok {
			t.Errorf("%s: benchstat printed no row", p.name)
			continue
		}
		if got := c.String(); got != w {
			t.Errorf("%s %v vs %v: we print %q, benchstat %q", p.name, p.base, p.test, got, w)
		}
		if !strings.HasPrefix(p.name, "Apart") {
			continue
		}
		// benchstat calls non-overlapping samples significant exactly
		// when their sizes are testable.
		if significant := !strings.HasPrefix(w, "~"); significant != c.Testable || c.Testable != Testable(len(p.base), len(p.test), 0.05) {
			t.Errorf("%s: benchstat %q, Testable %v (MinP %.4f)", p.name, w, c.Testable, c.MinP)
		}
	}
	if w := want["Apart3x5"]; w != "-9.90% (p=0.036 n=3+5)" {
		t.Errorf("3 against 5 apart: benchstat %q", w)
	}
}

func TestMinP(t *testing.T) {
	for _, tt := range []struct {
		n1, n2   int
		minP     float64
		testable bool
	}{
		{3, 5, 2.0 / 56, true}, {5, 3, 2.0 / 56, true}, {3, 4, 2.0 / 35, false}, {3, 3, 0.1, false}, {4, 4, 2.0 / 70, true},
		{2, 8, 2.0 / 45, true}, {2, 7, 2.0 / 36, false}, {1, 39, 0.05, true}, {1, 38, 2.0 / 39, false}, {0, 5, 1, false}, {1, 1, 1, false},
	} {
		if got := MinP(tt.n1, tt.n2); got-tt.minP > 1e-12 || tt.minP-got > 1e-12 {
			t.Errorf("MinP(%d, %d) = %v, want %v", tt.n1, tt.n2, got, tt.minP)
		}
		if got := Testable(tt.n1, tt.n2, 0.05); got != tt.testable {
			t.Errorf("Testable(%d, %d) = %v", tt.n1, tt.n2, got)
		}
	}
	if RunsToTest(0.05) != 4 || RunsToTest(0.01) != 5 || RunsToTestAgainst(3, 0.05) != 5 || RunsToTestAgainst(2, 0.05) != 8 || IntervalRuns(0.95) != 6 || IntervalRuns(0.90) != 5 {
		t.Errorf("RunsToTest %d %d, RunsToTestAgainst %d %d, IntervalRuns %d %d",
			RunsToTest(0.05), RunsToTest(0.01), RunsToTestAgainst(3, 0.05), RunsToTestAgainst(2, 0.05), IntervalRuns(0.95), IntervalRuns(0.90))
	}
}
