package store

import (
	"testing"
	"time"
)

func TestHistory(t *testing.T) {
	dir := t.TempDir()
	h, err := OpenHistory(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok, err := h.Meta("plan"); ok || err != nil {
		t.Fatalf("meta of a new history: %v %v", ok, err)
	}
	h.SetMeta("plan", "abc")
	h.SetMeta("plan", "def")
	now := time.Now()
	h.Save(RunRecord{Index: 2, Point: "threads=2", Rep: 1, Status: StatusFailed, Started: now, Ended: now, Error: "boom"})
	h.Save(RunRecord{Index: 0, Point: "threads=1", Rep: 1, Status: StatusDone, Started: now, Ended: now, Result: []byte(`{"a":1}`)})
	h.Save(RunRecord{Index: 2, Point: "threads=2", Rep: 1, Status: StatusDone, Started: now, Ended: now, Result: []byte(`{"b":2}`)})
	h.Close()

	h, err = OpenHistory(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	if v, ok, _ := h.Meta("plan"); !ok || v != "def" {
		t.Errorf("meta plan = %q", v)
	}
	runs, err := h.Runs()
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 2 || runs[0].Index != 0 || runs[1].Status != StatusDone || string(runs[1].Result) != `{"b":2}` || runs[1].Error != "" {
		t.Fatalf("runs %+v", runs)
	}
	if !runs[0].Started.Equal(now) {
		t.Errorf("time %v, want %v", runs[0].Started, now)
	}
	h.Reset()
	if runs, _ := h.Runs(); len(runs) != 0 {
		t.Errorf("runs after reset: %d", len(runs))
	}
}
