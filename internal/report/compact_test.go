package report

import (
	"encoding/json"
	"io"
	"os"
	"testing"

	"github.com/loadlab/loadlab/internal/experiment"
)

// TestCompactGoldens pins the compact summaries of recorded searches and
// comparisons (no load): the capacity search of testdata/capacity, as
// loadlab capacity prints it, and the A/B of testdata/ab/paired.json (a
// copy of cmd/loadlab's: loadlab target --cpu 1ms against --cpu 1.08ms,
// -c 2 -d 2s, 6 rounds), as loadlab ab and compare print it. go test
// -update rewrites them.
func TestCompactGoldens(t *testing.T) {
	t.Parallel()
	c, err := ReadCapacity("testdata/capacity")
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile("testdata/ab/paired.json")
	if err != nil {
		t.Fatal(err)
	}
	var ab experiment.Outcome
	if err := json.Unmarshal(data, &ab); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name string
		f    func(w io.Writer) error
	}{
		{"capacity-compact.txt", c.Doc.WriteText},
		{"ab-compact.txt", func(w io.Writer) error { return CompactVerdict(w, &ab, "results/ab") }},
	} {
		t.Run(tt.name, func(t *testing.T) { golden(t, tt.name, render(t, tt.f)) })
	}
}
