package demo

import (
	"strings"
	"testing"

	"github.com/loadlab/loadlab/internal/plan"
)

// TestWrittenPlanRunsAsItIs: the demo.yaml beside the demo's results loads
// with no environment, with this machine's binary and address in it.
func TestWrittenPlanRunsAsItIs(t *testing.T) {
	bin, addr := `/opt/load "lab"/bin/loadlab`, "127.0.0.1:29999"
	text := Written(bin, addr)
	if strings.Contains(string(text), "env.") {
		t.Fatalf("the written plan still reads the environment:\n%s", text)
	}
	p, err := plan.Parse("demo.yaml", text, plan.Options{LookupEnv: func(string) (string, bool) { return "", false }})
	if err != nil {
		t.Fatal(err)
	}
	spec, err := p.ServerSpec(p.Experiment.BaselineParams())
	if err != nil {
		t.Fatal(err)
	}
	if spec.Argv[0] != bin || p.Target.Host != addr || !strings.Contains(strings.Join(spec.Argv, " "), "--cpu-work "+CPUWork.String()) {
		t.Errorf("server %q, target %v", spec.Argv, p.Target)
	}
}
