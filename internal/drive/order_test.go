package drive

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/loadlab/loadlab/internal/experiment"

	"github.com/loadlab/loadlab/internal/plan"
	"github.com/loadlab/loadlab/internal/result"
	"github.com/loadlab/loadlab/internal/store"
)

// TestOnOrderIsThePlannedOrder: OnOrder hears every run of the order
// before the first one, as experiment.db then records them; resumed after
// an interrupt, it marks the runs done before, with their results, and
// only those.
func TestOnOrderIsThePlannedOrder(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	t.Cleanup(srv.Close)
	src := "target: " + srv.URL + `
steps: [ { get: / } ]
load: { closed: { vus: 1, iterations: 2 } }
params: { n: [1, 2, 3] }
repeat: 2
`
	p, err := plan.Parse("plan.yaml", []byte(src), plan.Options{})
	if err != nil {
		t.Fatal(err)
	}
	load := func(params map[string]any) (*plan.Plan, error) {
		return plan.Parse("plan.yaml", []byte(src), plan.Options{Params: params})
	}
	dir := t.TempDir()

	// First pass: interrupted once three runs have ended.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var first []Planned
	ended := 0
	out, err := Sweep(ctx, p, load, p.Fingerprint(), SweepOptions{Dir: dir, Workers: 1,
		OnOrder: func(o []Planned) {
			if ended != 0 {
				t.Errorf("OnOrder after %d runs ended", ended)
			}
			first = o
		},
		WriteRun: func(string, *result.Result) error {
			if ended++; ended == 3 {
				cancel()
			}
			return nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	if !out.Interrupted || len(first) != 6 {
		t.Fatalf("interrupted %v, %d runs planned: %+v", out.Interrupted, len(first), first)
	}
	points := experiment.Points(p.Experiment)
	for i, slot := range experiment.Order(len(points), 2, out.Seed) {
		want := Planned{Run: i + 1, Point: points[slot.Point].Key, Rep: slot.Rep}
		if first[i] != want {
			t.Errorf("planned run %d: %+v, want %+v", i+1, first[i], want)
		}
	}

	h, err := store.OpenHistory(dir)
	if err != nil {
		t.Fatal(err)
	}
	recs, err := h.Runs()
	h.Close()
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 3 {
		t.Fatalf("experiment.db holds %d runs, want the 3 ended", len(recs))
	}
	db := map[int]store.RunRecord{}
	for _, r := range recs {
		db[r.Index] = r
		if pl := first[r.Index]; pl.Point != r.Point || pl.Rep != r.Rep {
			t.Errorf("experiment.db's run %d is %s #%d; planned: %s #%d", r.Index+1, r.Point, r.Rep, pl.Point, pl.Rep)
		}
	}

	// Resumed: the same order, the three runs done marked with their results.
	var again []Planned
	if _, err := Sweep(context.Background(), p, load, p.Fingerprint(), SweepOptions{Dir: dir, Workers: 1,
		OnOrder: func(o []Planned) { again = o }}); err != nil {
		t.Fatal(err)
	}
	if len(again) != 6 {
		t.Fatalf("resumed: %d runs planned", len(again))
	}
	for i, pl := range again {
		if pl.Run != first[i].Run || pl.Point != first[i].Point || pl.Rep != first[i].Rep {
			t.Errorf("resumed: planned run %d %+v, first %+v", i+1, pl, first[i])
		}
		_, wasDone := db[i]
		if (pl.Before != nil) != wasDone {
			t.Errorf("resumed: run %d done before %v, in experiment.db %v", i+1, pl.Before != nil, wasDone)
		}
		if pl.Before != nil && pl.Before.Summary.Requests != 2 {
			t.Errorf("resumed: run %d's result has %d requests, want 2", i+1, pl.Before.Summary.Requests)
		}
	}
}
