package plan

import (
	"errors"
	"strings"
	"testing"
)

const limitsBase = "target: http://127.0.0.1:1\nsteps: [ { get: / } ]\nload: { closed: { vus: 1, iterations: 1 } }\nserver:\n  run: \"true\"\n"

// server.limits: plain values and params, each kind of cpus, and a mistake
// at the value that has it, at load or when a point renders it.
func TestServerLimits(t *testing.T) {
	p, err := Parse("plan.yaml", []byte(limitsBase+"  limits: { cpus: \"0-1\", memory: 512MiB, swap: 0 }\n"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	spec, err := p.ServerSpec(nil)
	if err != nil {
		t.Fatal(err)
	}
	if l := spec.Limits; l.CPUs.String() != "0-1" || l.Memory != 512<<20 || !l.SwapSet || l.Swap != 0 {
		t.Errorf("limits %+v", l)
	}

	swept := limitsBase + "  limits: { cpus: \"{{ box.cpus }}\", memory: \"{{ box.memory }}\" }\n" +
		"params:\n  box: { \"1x\": { cpus: 1, memory: 512MiB }, \"half\": { cpus: 50%, memory: 1GiB }, \"bad\": { cpus: 1.5, memory: 1GiB } }\n"
	p, err = Parse("plan.yaml", []byte(swept), Options{})
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{"1x": "cpus 1, memory 512 MiB", "half": "cpus 50%, memory 1 GiB"} {
		box := map[string]any{"cpus": map[string]string{"1x": "1", "half": "50%"}[name], "memory": map[string]string{"1x": "512MiB", "half": "1GiB"}[name]}
		spec, err := p.ServerSpec(map[string]any{"box": box})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if got := spec.Limits.String(); got != want {
			t.Errorf("%s: limits %q, want %q", name, got, want)
		}
	}
	_, err = p.ServerSpec(map[string]any{"box": map[string]any{"cpus": "1.5", "memory": "1GiB"}})
	var errs Errors
	if !errors.As(err, &errs) || len(errs) != 1 || errs[0].Pos.Line != 6 || !strings.Contains(errs[0].Msg, "server.limits.cpus: \"1.5\" is not a whole count of CPUs: write a quota such as 150%") {
		t.Errorf("a bad point: %v", err)
	}

	for _, tt := range []struct {
		name, limits string
		col          int
		want         string
	}{
		{"bad cpus", "{ cpus: two }", 19, `server.limits.cpus: bad cpus "two"`},
		{"bad memory", "{ memory: lots }", 21, `server.limits.memory: bad size "lots"`},
		{"tiny memory", "{ memory: 512 }", 21, "server.limits.memory: 512 B is below 4 MiB"},
		{"swap alone", "{ swap: 1GiB }", 19, "server.limits.swap needs server.limits.memory"},
		{"unknown key", "{ cpu: 1 }", 13, `unknown key "cpu" in server.limits; did you mean "cpus"?`},
	} {
		_, err := Parse("plan.yaml", []byte(limitsBase+"  limits: "+tt.limits+"\n"), Options{})
		var errs Errors
		if !errors.As(err, &errs) || len(errs) != 1 || errs[0].Pos.Line != 6 || errs[0].Pos.Col != tt.col || !strings.Contains(errs[0].Msg, tt.want) {
			t.Errorf("%s: %v; want one error at 6:%d saying %q", tt.name, err, tt.col, tt.want)
		}
	}
}
