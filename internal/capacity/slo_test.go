package capacity

import (
	"errors"
	"testing"

	"github.com/loadlab/loadlab/internal/threshold"
)

func TestParseSLO(t *testing.T) {
	ts, err := ParseSLO(`p95(latency) < 300ms, error_rate < 1%,p99(latency, step="log,in") < 1s`)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"p95(latency) < 300ms", "error_rate < 1%", `p99(latency, step="log,in") < 1s`}
	if len(ts) != len(want) {
		t.Fatalf("%d clauses, want %d", len(ts), len(want))
	}
	for i, th := range ts {
		if th.Text != want[i] {
			t.Errorf("clause %d: %q, want %q", i, th.Text, want[i])
		}
	}
	for _, tc := range []struct {
		slo string
		col int
	}{
		{"p95(latency) < 300ms, eror_rate < 1%", 23},
		{"p95(latency) < 300ms,   p95(latency) < 3parsecs", 40},
		{"p95(latency) < 300ms,", 22},
		{"p95(latncy) < 1s", 5},
	} {
		_, err := ParseSLO(tc.slo)
		var se *threshold.SyntaxError
		if !errors.As(err, &se) || se.Col != tc.col {
			t.Errorf("ParseSLO(%q): %v, want a syntax error at column %d", tc.slo, err, tc.col)
		}
	}
}
