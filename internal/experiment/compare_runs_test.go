package experiment

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/loadlab/loadlab/internal/result"
	"github.com/loadlab/loadlab/internal/store"
)

// TestCompareNumbersRunsAsTheExperiment: a suspect run of an experiment's
// point is named by the experiment's run number (run 4, as the verdict and
// runs/004 have it), not by its place among the point's runs (run 2).
func TestCompareNumbersRunsAsTheExperiment(t *testing.T) {
	dir := t.TempDir()
	o := Outcome{Schema: SchemaExperiment, Points: []Point{{Key: "threads=1", Baseline: true}, {Key: "threads=2"}}}
	for i, pt := range []string{"threads=2", "threads=1", "threads=2", "threads=1"} {
		run := filepath.Join("runs", "00"+string(rune('1'+i)))
		r := &result.Result{Schema: result.SchemaResult, Summary: result.Summary{ThroughputRPS: 100, Responses: 100, DurationS: 1}}
		if i == 3 {
			r.Validity = []result.Warning{{Code: "late", Message: "late requests"}}
		}
		if err := os.MkdirAll(filepath.Join(dir, run), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := store.WriteResult(filepath.Join(dir, run), r); err != nil {
			t.Fatal(err)
		}
		o.Runs = append(o.Runs, RunInfo{Index: i + 1, Point: pt, Status: "done", Dir: run})
	}
	data, _ := json.Marshal(o)
	if err := os.WriteFile(filepath.Join(dir, "experiment.json"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	a, err := LoadSide(dir, "")
	if err != nil {
		t.Fatal(err)
	}
	c := Compare(a, a)
	if len(c.Suspect) != 2 || c.Suspect[0].Run != 4 {
		t.Errorf("suspect runs %+v, want run 4 (the experiment's numbering)", c.Suspect)
	}
}

// TestSchemaVersions: experiment.json v1 (knee -1 for none) and v2 are read;
// any other version is refused, so that an older loadlab refuses a v2 file
// rather than take its absent knee for the first level.
func TestSchemaVersions(t *testing.T) {
	for _, tt := range []struct {
		schema string
		ok     bool
	}{{SchemaExperimentV1, true}, {SchemaExperiment, true}, {"loadlab.experiment/v3", false}, {"", false}} {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "experiment.json"), []byte(`{"schema": "`+tt.schema+`", "points": [], "runs": []}`), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := LoadOutcome(dir)
		if (err == nil) != tt.ok {
			t.Errorf("schema %q: error %v, want ok=%v", tt.schema, err, tt.ok)
		}
	}
	if SchemaExperiment != "loadlab.experiment/v2" {
		t.Errorf("experiment.json is written as %s", SchemaExperiment)
	}
}
