package plan

import (
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
)

// fuzzSeeds are the plans of the docs, the examples and the test fixtures.
func fuzzSeeds(t testing.TB) [][]byte {
	var out [][]byte
	var files []string
	for _, pattern := range []string{"testdata/good/*.yaml", "testdata/bad/*.yaml", "testdata/wire/*.yaml", "testdata/bounds/*.yaml", "../../examples/*/*.yaml", "../demo/*.yaml"} {
		m, _ := filepath.Glob(pattern)
		files = append(files, m...)
	}
	for _, f := range files {
		if b, err := os.ReadFile(f); err == nil {
			out = append(out, b)
		}
	}
	block := regexp.MustCompile("(?s)```yaml\n(.*?)```")
	docs, _ := filepath.Glob("../../docs/guide/*.md")
	for _, doc := range append([]string{"../../docs/plan.md", "../../README.md"}, docs...) {
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

// TestBoundsFixtures: the probes that found an unbounded size or a check
// made too late (issue 28) are fixtures in testdata/bounds, seeds of the
// fuzzers too. The first line says what each must give: "# want: L:C: msg"
// is a plan error there, when the plan loads; "# build: msg" is a request
// that is not built (its size is only known per request).
func TestBoundsFixtures(t *testing.T) {
	t.Parallel()
	files, _ := filepath.Glob("testdata/bounds/*.yaml")
	if len(files) < 8 {
		t.Fatalf("only %d fixtures", len(files))
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			t.Parallel()
			data, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			first, _, _ := strings.Cut(string(data), "\n")
			p, err := Load(file, Options{})
			switch {
			case strings.HasPrefix(first, "# want: "):
				want := file + ":" + strings.TrimPrefix(first, "# want: ")
				if err == nil || !strings.Contains(err.Error(), want) {
					t.Fatalf("got %v, want %q", err, want)
				}
			case strings.HasPrefix(first, "# build: "):
				if err != nil {
					t.Fatal(err)
				}
				// Its memory is measured by the probes (docs/plan.md,
				// Limits): TotalAlloc here would count the parallel tests'.
				if _, err := buildErr(p); err == nil || !strings.Contains(err.Error(), strings.TrimPrefix(first, "# build: ")) {
					t.Fatalf("Build: %v, want %q", err, strings.TrimPrefix(first, "# build: "))
				}
			default:
				t.Fatalf("the first line, %q, says neither # want: nor # build:", first)
			}
		})
	}
}

// fuzzTemplateSeeds are templates: the probes' and a few of each kind.
var fuzzTemplateSeeds = []string{
	`{{ randomString(1048576) }}{{ randomString(1048576) }}`,
	`{{ repeat(randomString(1048576), 200) }}`,
	`{{ repeat("x", 1000000) }}`,
	`{{ int(p) }}`, `{{ [10,20][p] }}`, `{{ p }}`, "a\r\nX-Evil: 1", `/a%zz`, `%4`,
	`{{ upper(p) + "-" + string(vu) }}`, `{{ iteration + 1 }}`, `{{ uuid() }}`, `{{ toJSON({"a": [1, 2]}) }}`,
}

// FuzzTemplate: whatever a template and a param's value, put in a step's
// URL, a header and a body, loading the plan ends in a plan or positioned
// errors, and a plan that loads builds its request, or refuses to, within
// its bounds: no panic, no request over its limits, and memory bounded.
func FuzzTemplate(f *testing.F) {
	for _, s := range fuzzTemplateSeeds {
		f.Add(s, "x")
		f.Add(s, "2")
	}
	f.Fuzz(func(t *testing.T, tpl, param string) {
		if len(tpl) > 4096 || len(param) > 4096 {
			return
		}
		quoted := func(s string) string {
			return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`, "\r", `\r`).Replace(s) + `"`
		}
		plan := "target: http://127.0.0.1:9\nvars: { p: " + quoted(param) + " }\nhttp: { max_request_header: 4KiB, max_url: 4KiB, max_request_body: 64KiB }\nsteps:\n" +
			"  - post: " + quoted("/"+tpl) + "\n    headers: { X-T: " + quoted(tpl) + " }\n    body: " + quoted(tpl) + "\n" +
			"load: { closed: { vus: 1, iterations: 1 } }\n"
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		p, err := Parse("plan.yaml", []byte(plan), Options{})
		var req string
		if err == nil {
			req, err = buildErr(p)
		}
		runtime.ReadMemStats(&after)
		if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 64<<20 {
			t.Errorf("a template of %d bytes allocated %d MiB", len(tpl), alloc>>20)
		}
		if len(req) > 4<<10+4<<10+64<<10+4<<10 {
			t.Errorf("a request of %d bytes, over its limits", len(req))
		}
		var errs Errors
		if p == nil && !errors.As(err, &errs) {
			t.Fatalf("error %T %q is not a list of positioned plan errors", err, err)
		}
		for _, e := range errs {
			if e.Pos.Line < 1 || e.Pos.Col < 1 {
				t.Errorf("an error without a place: %q", e)
			}
		}
	})
}

// FuzzData: whatever a CSV data file holds, a plan that reads it loads or
// says why where it names the file, within its bounds.
func FuzzData(f *testing.F) {
	for _, file := range []string{"testdata/users.csv", "testdata/headeronly.csv", "testdata/noheader.csv", "testdata/empty.csv", "testdata/bounds/wide.csv"} {
		if b, err := os.ReadFile(file); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte("a,b\n\"1\n2\",3\n"))
	f.Add([]byte("\ufeffemail\n" + strings.Repeat("x", 2000) + "\n"))
	dir := f.TempDir()
	plan := filepath.Join(dir, "plan.yaml")
	if err := os.WriteFile(plan, []byte("data: { d: { csv: d.csv } }\ntarget: http://127.0.0.1:9\nsteps: [ { get: / } ]\nload: { closed: { vus: 1, iterations: 1 } }\n"), 0o644); err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if err := os.WriteFile(filepath.Join(dir, "d.csv"), data, 0o644); err != nil {
			t.Fatal(err)
		}
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		p, err := Load(plan, Options{})
		runtime.ReadMemStats(&after)
		if alloc, most := after.TotalAlloc-before.TotalAlloc, uint64(20*len(data)+16<<20); alloc > most {
			t.Errorf("a CSV of %d bytes allocated %d MiB", len(data), alloc>>20)
		}
		if err == nil {
			if n := len(p.Data[0].Columns); n == 0 || n > MaxDataColumns {
				t.Errorf("a data source of %d columns", n)
			}
			return
		}
		var errs Errors
		if !errors.As(err, &errs) || len(errs) == 0 {
			t.Fatalf("error %T %q is not a list of positioned plan errors", err, err)
		}
		for _, e := range errs {
			if e.Pos.Line < 1 || len(e.Error()) > 8<<10 {
				t.Errorf("an error without a place, or too long: %.300q", e)
			}
		}
	})
}
