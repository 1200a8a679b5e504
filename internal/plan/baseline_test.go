package plan

import (
	"strings"
	"testing"
)

// TestSetParamsWithoutTheBaseline: --set params.x=[...] whose values leave
// out the file's baseline takes the first value as the baseline, and says
// so in a notice; a baseline the file or --set names wrongly is still an
// error.
func TestSetParamsWithoutTheBaseline(t *testing.T) {
	const src = `target: http://127.0.0.1:1
steps: [ { get: "/?t={{ threads }}" } ]
load: { closed: { vus: 1, iterations: 1 } }
params: { threads: [1, 5, 8], allocator: { glibc: "", jemalloc: /lib/j.so } }
baseline: { threads: 5, allocator: jemalloc }
`
	p, err := Parse("plan.yaml", []byte(src), Options{Set: []string{"params.threads=[2, 3]", "params.allocator={glibc: x, tcmalloc: y}"}})
	if err != nil {
		t.Fatal(err)
	}
	if got := p.Experiment.BaselineParams(); got["threads"] != 2 || got["allocator"] != "x" {
		t.Errorf("baseline %v, want threads=2 allocator=glibc", got)
	}
	want := []string{
		"--set params.threads=[2, 3]: the baseline threads=5 (plan.yaml:5:22) is not among these values (2, 3): the first, 2, is the baseline",
		"--set params.allocator={glibc: x, tcmalloc: y}: the baseline allocator=jemalloc (plan.yaml:5:36) is not among these values (glibc, tcmalloc): the first, glibc, is the baseline",
	}
	if strings.Join(p.Notices, "\n") != strings.Join(want, "\n") {
		t.Errorf("notices\n%s\nwant\n%s", strings.Join(p.Notices, "\n"), strings.Join(want, "\n"))
	}
	// Values that still hold the baseline: no notice.
	if p, err := Parse("plan.yaml", []byte(src), Options{Set: []string{"params.threads=[5, 6]"}}); err != nil || len(p.Notices) != 0 || p.Experiment.BaselineParams()["threads"] != 5 {
		t.Errorf("%v %v", err, p.Notices)
	}
	for _, set := range [][]string{nil, {"baseline.threads=7"}, {"params.threads=[2, 3]", "baseline.threads=7"}} {
		bad := strings.Replace(src, "threads: 5,", "threads: 7,", 1)
		if set != nil {
			bad = src
		}
		if _, err := Parse("plan.yaml", []byte(bad), Options{Set: set}); err == nil || !strings.Contains(err.Error(), "baseline threads=7 is not one of its values") {
			t.Errorf("--set %v: %v", set, err)
		}
	}
}
