package plan

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// limitPlan is a valid plan whose parts the limit tests replace.
func limitPlan(load, extra string) string {
	return "target: http://127.0.0.1:9\nsteps: [ { get: / } ]\nload: " + load + "\n" + extra
}

// TestLimits: each documented limit (docs/plan.md, Limits) is a positioned
// error that says the limit, found when the plan loads, and no error
// message quotes more than a short start of a long value.
func TestLimits(t *testing.T) {
	closed := "{ closed: { vus: 1, iterations: 1 } }"
	deepFlow := "vars:\n  a: " + strings.Repeat("[", 1000) + strings.Repeat("]", 1000) + "\n"
	var deepBlock strings.Builder
	deepBlock.WriteString("vars:\n  a:\n")
	for i := range 1000 {
		fmt.Fprintf(&deepBlock, "%sk%d:\n", strings.Repeat("  ", i+2), i)
	}
	var manySteps strings.Builder
	manySteps.WriteString("target: http://127.0.0.1:9\nload: " + closed + "\nsteps:\n")
	for range MaxSteps + 1 {
		manySteps.WriteString("  - get: /\n")
	}
	var manyScenarios strings.Builder
	manyScenarios.WriteString("target: http://127.0.0.1:9\nload: " + closed + "\nscenarios:\n")
	for i := range MaxScenarios + 1 {
		fmt.Fprintf(&manyScenarios, "  s%d: { steps: [ { get: / } ] }\n", i)
	}
	tests := []struct {
		name, plan string
		at         string // line:col
		want       string
	}{
		{"repeat", limitPlan(closed, "repeat: 2147483648\n"), "4:9", "repeat must be at most 1,000 (loadlab's limit; see Limits in docs/plan.md), got 2,147,483,648"},
		{"vus", limitPlan("{ closed: { vus: 2000000, iterations: 1 } }", ""), "3:24", "vus must be at most 1,000,000"},
		{"open-max-vus", limitPlan("{ open: { rate: 1/s, duration: 1s, max_vus: 1000001 } }", ""), "3:51", "max_vus must be at most 1,000,000"},
		{"stage-ramp", limitPlan("{ stages: [ { vus: 1 }, { ramp: 5000000, over: 1s } ] }", ""), "3:39", "ramp (VUs) must be at most 1,000,000"},
		{"matrix-points", limitPlan(closed, "params: { a: 1..100, b: 1..100, c: 1..100 }\nvary: matrix\n"), "4:9", "params make 10,001 points"},
		{"runs", limitPlan(closed, "params: { a: 1..101 }\nrepeat: 1000\n"), "5:9", "101 points × repeat 1000 make 101,000 runs; the most is 100,000"},
		{"deep-flow", limitPlan(closed, deepFlow), "5:104", "YAML nested too deeply: the most is 100 levels"},
		{"deep-block", limitPlan(closed, deepBlock.String()), "", "YAML nested too deeply: the most is 100 levels"},
		// Far deeper, refused before the YAML parser, which took 11 s and
		// 5 GB for 50,000 levels of {a:, 2 GB for 100,000 of "- " on a line.
		{"deep-flow-map", limitPlan(closed, "vars:\n  a: "+strings.Repeat("{a: ", 50_000)+"1"+strings.Repeat("}", 50_000)+"\n"), "5:4006", "YAML nested too deeply"},
		{"deep-flow-list", limitPlan(closed, "vars:\n  a: "+strings.Repeat("[", 400_000)+strings.Repeat("]", 400_000)+"\n"), "5:1006", "YAML nested too deeply"},
		{"deep-dashes", limitPlan(closed, "vars:\n  a:\n    "+strings.Repeat("- ", 100_000)+"x\n"), "6:2005", "YAML nested too deeply"},
		{"long-name", "name: " + strings.Repeat("n", 300<<10) + "\n" + limitPlan(closed, ""), "1:7", `a value of 300 KiB ("nnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnn"…); the most is 256 KiB`},
		{"long-key", limitPlan(closed, "vars: { "+strings.Repeat("k", MaxValueBytes+1)+": 1 }\n"), "4:9", "a value of 256 KiB"},
		{"big-file", limitPlan(closed, "#"+strings.Repeat("x", MaxPlanBytes)+"\n"), "1:1", "the plan is over 1 MiB, loadlab's limit for a plan file"},
		{"steps", manySteps.String(), "4:3", "the number of steps of scenario default must be at most 10,000 (loadlab's limit; see Limits in docs/plan.md), got 10,001"},
		{"scenarios", manyScenarios.String(), "4:5", "the number of scenarios must be at most 1,000 (loadlab's limit; see Limits in docs/plan.md), got 1,001"},
		// Under the value limit, a long value quoted in an error is cut,
		// the only argument of its message or not.
		{"long-name-path", "name: a/" + strings.Repeat("n", 100_000) + "\n" + limitPlan(closed, ""), "1:7", `name "a/nnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnn… (97.7 KiB in all)" must not be empty, . or .., nor hold / or \: it names the results directory results/NAME`},
		{"long-target", "target: " + strings.Repeat("t", 100_000) + "\nsteps: [ { get: / } ]\nload: " + closed + "\n", "1:9", `target must be an http:// or https:// URL with a host, got "tttttttttttttttttttttttttttttttttttttttttttttttttttttttttttttttt… (97.7 KiB in all)"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			began := time.Now()
			_, err := Parse("plan.yaml", []byte(tt.plan), Options{})
			if took := time.Since(began); took > 5*time.Second {
				t.Errorf("loading took %v", took)
			}
			var errs Errors
			if !errors.As(err, &errs) || len(errs) == 0 {
				t.Fatalf("error %T %v, want positioned plan errors", err, err)
			}
			if len(err.Error()) > 4096 {
				t.Errorf("the error is %d bytes long: %.300s", len(err.Error()), err)
			}
			for _, e := range errs {
				if e.Pos.Line == 0 {
					t.Errorf("an error without a line: %v", e)
				}
			}
			want := "plan.yaml:" + tt.at + ": "
			if tt.at == "" {
				want = "plan.yaml:"
			}
			for _, e := range errs {
				if strings.HasPrefix(e.Error(), want) && strings.Contains(e.Msg, tt.want) {
					if strings.Contains(tt.name, "deep") && len(errs) != 1 {
						t.Errorf("%d errors, want one (no follow-on errors after nested too deeply):\n%v", len(errs), err)
					}
					return
				}
			}
			t.Errorf("got\n%.2000s\nwant an error at %s saying %q", err, tt.at, tt.want)
		})
	}
}

// TestLimitsAllowUpTo: the limits themselves are allowed.
func TestLimitsAllowUpTo(t *testing.T) {
	closed := "{ closed: { vus: 1000000, iterations: 1 } }"
	plan := limitPlan(closed, "vars: { big: \""+strings.Repeat("v", MaxValueBytes)+"\" }\nparams: { a: 1..100 }\nrepeat: 1000\n")
	p, err := Parse("plan.yaml", []byte(plan), Options{})
	if err != nil {
		t.Fatalf("%.1000v", err)
	}
	if p.Load.VUs != MaxVUs || p.Experiment.Repeat != MaxRepeat || p.Experiment.PointCount() != 100 {
		t.Errorf("vus %d, repeat %d, points %d", p.Load.VUs, p.Experiment.Repeat, p.Experiment.PointCount())
	}
}

// TestDataRowLimit: a CSV data source over the row limit is refused where
// the plan names it.
func TestDataRowLimit(t *testing.T) {
	defer func(n int) { dataRowLimit = n }(dataRowLimit)
	dataRowLimit = 3
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "users.csv"), []byte("email\na\nb\nc\nd\n"), 0o644)
	path := filepath.Join(dir, "plan.yaml")
	os.WriteFile(path, []byte("data: { users: { csv: users.csv } }\n"+limitPlan("{ closed: { vus: 1, iterations: 1 } }", "")), 0o644)
	_, err := Load(path, Options{})
	if err == nil || !strings.Contains(err.Error(), path+":1:23: data source users: ") || !strings.Contains(err.Error(), "has over 3 rows, loadlab's limit") {
		t.Fatalf("got %v", err)
	}
	os.WriteFile(filepath.Join(dir, "users.csv"), []byte("email\na\nb\nc\n"), 0o644)
	if _, err := Load(path, Options{}); err != nil {
		t.Fatal(err)
	}
}

// TestFilesThatNeverEnd: a data source or a server file's template that is
// not a regular file (/dev/zero, which a read never finishes) is refused
// where the plan names it, and so is one over its size limit.
func TestFilesThatNeverEnd(t *testing.T) {
	if _, err := os.Stat("/dev/zero"); err != nil {
		t.Skip("no /dev/zero")
	}
	dir := t.TempDir()
	big := filepath.Join(dir, "big.tmpl")
	os.WriteFile(big, make([]byte, MaxTemplateBytes+1), 0o644)
	for _, tt := range []struct{ name, plan, want string }{
		{"csv", "data: { users: { csv: /dev/zero } }\n", "plan.yaml:1:23: data source users: /dev/zero is not a regular file"},
		{"template", "server: { run: x, files: { conf: /dev/zero } }\n", "plan.yaml:1:34: server.files conf: the template: /dev/zero is not a regular file"},
		{"template-size", "server: { run: x, files: { conf: " + big + " } }\n", "server.files conf: the template: " + big + " is over 1 MiB, loadlab's limit for it"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(dir, "plan.yaml")
			os.WriteFile(path, []byte(tt.plan+limitPlan("{ closed: { vus: 1, iterations: 1 } }", "")), 0o644)
			_, err := Load(path, Options{})
			if err == nil || !strings.Contains(err.Error(), filepath.Join(dir, tt.want)) && !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("got %v, want %q", err, tt.want)
			}
		})
	}
}

// TestDepthScanKeepsQuotes: brackets inside quoted strings and comments are
// not nesting, however many.
func TestDepthScanKeepsQuotes(t *testing.T) {
	many := strings.Repeat("[{", 2000)
	plan := "# " + many + "\nvars:\n  a: \"" + many + "\"\n  b: '" + many + "' # " + many + "\n  c: \"x\\\" " + many + "\"\n" + limitPlan("{ closed: { vus: 1, iterations: 1 } }", "")
	if _, err := Parse("plan.yaml", []byte(plan), Options{}); err != nil {
		t.Fatalf("%.500v", err)
	}
}
