package plan

import (
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"testing"
)

// fuzzSeeds are the plans of the docs, the examples and the test fixtures.
func fuzzSeeds(t testing.TB) [][]byte {
	var out [][]byte
	var files []string
	for _, pattern := range []string{"testdata/good/*.yaml", "testdata/bad/*.yaml", "testdata/wire/*.yaml", "../../examples/*/*.yaml", "../demo/*.yaml"} {
		m, _ := filepath.Glob(pattern)
		files = append(files, m...)
	}
	for _, f := range files {
		if b, err := os.ReadFile(f); err == nil {
			out = append(out, b)
		}
	}
	block := regexp.MustCompile("(?s)```yaml\n(.*?)```")
	for _, doc := range []string{"../../docs/plan.md", "../../README.md"} {
		b, err := os.ReadFile(doc)
		if err != nil {
			t.Fatalf("seed corpus: %v", err)
		}
		for _, m := range block.FindAllSubmatch(b, -1) {
			out = append(out, m[1])
		}
	}
	if len(out) < 20 {
		t.Fatalf("only %d seed plans", len(out))
	}
	return out
}

// FuzzLoad: whatever the bytes, loading a plan does not panic, and ends
// in a valid plan or in errors that each name a place in the file, in
// memory bounded by the plan's size. CI runs it for a bounded time
// (scripts/test); what it finds is kept in testdata/fuzz/FuzzLoad.
func FuzzLoad(f *testing.F) {
	for _, s := range fuzzSeeds(f) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		p, err := Parse("plan.yaml", data, Options{})
		runtime.ReadMemStats(&after)
		// goccy/go-yaml takes about 30 times the file as it reads it.
		if alloc, most := after.TotalAlloc-before.TotalAlloc, uint64(100*len(data)+64<<20); alloc > most {
			t.Errorf("loading %d bytes allocated %d MB, more than %d MB", len(data), alloc>>20, most>>20)
		}
		if err == nil {
			if p == nil || len(p.Scenarios) == 0 || p.Load.Kind == "" {
				t.Fatalf("no error, but not a valid plan: %+v", p)
			}
			// What the plan asks of the run is within the limits too.
			if e := p.Experiment; e != nil && (e.PointCount() > MaxPoints || e.PointCount()*int64(e.Repeat) > MaxRuns) {
				t.Errorf("a valid plan of %d points × repeat %d", e.PointCount(), e.Repeat)
			}
			if p.Load.MostVUs() > MaxVUs {
				t.Errorf("a valid plan of %d VUs", p.Load.MostVUs())
			}
			return
		}
		if p != nil {
			t.Errorf("a plan and an error: %v", err)
		}
		var errs Errors
		if !errors.As(err, &errs) || len(errs) == 0 {
			t.Fatalf("error %T %q is not a list of positioned plan errors", err, err)
		}
		for _, e := range errs {
			if e.Pos.Line < 1 || e.Pos.Col < 1 || e.Pos.File == "" {
				t.Errorf("an error without a place: %q (at %+v)", e, e.Pos)
			}
			if len(e.Error()) > 8<<10 {
				t.Errorf("an error of %d bytes: %.200s", len(e.Error()), e)
			}
		}
	})
}
