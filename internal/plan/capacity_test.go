package plan

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

const capacityBase = `name: cap
target: http://127.0.0.1:9
steps:
  - get: /
    name: home
load: { open: { rate: 10/s, max_vus: 50, duration: 10s } }
`

// TestCapacitySection: capacity: reads the search's settings, and each bad
// one is refused at its line and column.
func TestCapacitySection(t *testing.T) {
	dir := t.TempDir()
	load := func(text string) (*Plan, error) {
		path := filepath.Join(dir, "plan.yaml")
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return Load(path, Options{})
	}
	p, err := load(capacityBase + "capacity:\n  slo: [\"p95(latency) < 300ms\", \"p99(latency, step=home) < 1s\"]\n  precision: 5%\n  confirm: 0\n  step_max: 15s\n")
	if err != nil {
		t.Fatal(err)
	}
	c := p.Capacity
	if c == nil || len(c.SLO) != 2 || c.SLO[1].T == nil || c.SLO[1].T.Filters.Step != "home" || c.Precision != 0.05 || !c.ConfirmSet || c.Confirm != 0 || c.StepMax != 15*time.Second || c.By != "rate" {
		t.Errorf("capacity %+v", c)
	}
	if p, err := load(capacityBase + "capacity: {slo: 'error_rate < 1%'}\n"); err != nil || p.Capacity.ConfirmSet || len(p.Capacity.SLO) != 1 {
		t.Errorf("one clause: %+v, %v", p.Capacity, err)
	}
	closed := strings.Replace(capacityBase, "open: { rate: 10/s, max_vus: 50, duration: 10s }", "closed: { vus: 2, duration: 10s }", 1)
	if p, err := load(closed + "capacity: {by: vus}\n"); err != nil || p.Capacity.By != "vus" {
		t.Errorf("by vus: %+v, %v", p.Capacity, err)
	}
	for _, tc := range []struct {
		name, text, at, want string
	}{
		{"slo that does not parse", capacityBase + "capacity:\n  slo: [\"p95(latency) < 300ms\", \"eror_rate < 1%\"]\n", "8:34", `unknown metric "eror_rate"`},
		{"slo about no step", capacityBase + "capacity:\n  slo: \"p95(latency, step=login) < 1s\"\n", "8:", `login`},
		{"precision 0", capacityBase + "capacity:\n  precision: 0%\n", "8:14", "capacity precision must be over 0%"},
		{"precision without %", capacityBase + "capacity:\n  precision: 2\n", "8:14", "capacity precision"},
		{"negative confirm", capacityBase + "capacity:\n  confirm: -1\n", "8:12", "capacity confirm must be at least 0"},
		{"bad step_max", capacityBase + "capacity:\n  step_max: long\n", "8:13", "capacity step_max must be a duration"},
		{"bad by", capacityBase + "capacity:\n  by: users\n", "8:7", `capacity by must be rate`},
		{"by rate of a closed load", closed + "capacity:\n  slo: error_rate < 1%\n", "8:", "capacity by rate needs an open load"},
		{"by vus of an open load", capacityBase + "capacity:\n  by: vus\n", "8:7", "capacity by vus needs a closed load"},
		{"unknown key", capacityBase + "capacity:\n  precison: 2%\n", "8:3", `unknown key "precison" in capacity; did you mean "precision"?`},
		{"not a mapping", capacityBase + "capacity: yes\n", "7:11", "capacity must be a mapping"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := load(tc.text)
			var es Errors
			if !errors.As(err, &es) {
				t.Fatalf("error %v, want plan errors", err)
			}
			if !strings.Contains(err.Error(), "plan.yaml:"+tc.at) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error\n%v\nwant at %s: %q", err, tc.at, tc.want)
			}
		})
	}
}
