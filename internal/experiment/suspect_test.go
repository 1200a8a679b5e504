package experiment

import (
	"testing"

	"github.com/loadlab/loadlab/internal/result"
)

// TestSuspectRuns counts each run once, whatever number of suspect warnings
// it carries, leaves out warnings about the server (a swap is a finding, not
// a measuring fault) and runs not done.
func TestSuspectRuns(t *testing.T) {
	w := func(codes ...string) *result.Result {
		r := &result.Result{}
		for _, c := range codes {
			r.Validity = append(r.Validity, result.Warning{Code: c})
		}
		return r
	}
	s := suspectRuns([]*result.Result{w("machine_busy", "late"), w("server_swapped"), nil, w(), w("machine_busy")})
	if s == nil || s.Runs != 2 || s.Of != 4 || s.Codes["machine_busy"] != 2 || s.Codes["late"] != 1 || s.Codes["server_swapped"] != 0 {
		t.Fatalf("suspect %+v", s)
	}
	if !s.Untrusted() {
		t.Error("2 of 4 runs suspect: want untrusted")
	}
	if s := suspectRuns([]*result.Result{w("server_swapped"), w()}); s != nil {
		t.Errorf("no suspect run: %+v", s)
	}
}
