package experiment

import (
	"slices"

	"github.com/loadlab/loadlab/internal/result"
)

// TimeOnlyCodes are the suspect warnings that move time figures alone
// (throughput, latency, elapsed, CPU, capacity): CPU taken by the host or a
// neighbour slows the server and loadlab, not what the server holds in
// memory. The other suspect codes (loadlab saturated, or late with its
// arrivals) change the load itself, and with it every figure; late only
// once its arrivals are late enough to bunch (LateMovesMemoryMS).
var TimeOnlyCodes = []string{"machine_busy", "cpu_steal"}

// MemoryFigure reports whether a figure is a memory figure, which
// TimeOnlyCodes do not move.
func MemoryFigure(id FigureID) bool {
	switch id {
	case FigureRSSPeak, FigureRSSAverage, FigurePSSPeak, FigurePSSAverage:
		return true
	}
	return false
}

// Moves reports whether a suspect warning moves figure id.
func Moves(code string, id FigureID) bool {
	return !slices.Contains(TimeOnlyCodes, code) || !MemoryFigure(id)
}

// LateMovesMemoryMS is the lateness at the p99 of a run's arrivals from
// which its late warning moves the memory figures too. What a server
// holds follows the requests it has in hand; arrivals that left a few
// milliseconds after they were due (a busy machine waking loadlab's timers
// late) reach it at the same rate and in the same number, only jittered,
// while arrivals held back a tenth of a second or more come in bursts
// that a server may meet with more threads, buffers or workers. Below it,
// late moves the time figures alone (latency is measured from when each
// request was due, so the lateness is in it).
const LateMovesMemoryMS = 100.0

// movesIn reports whether a suspect warning of run r moves figure id: as
// Moves, but a late warning moves memory only when r's arrivals were late
// by LateMovesMemoryMS or more at the p99.
func movesIn(r *result.Result, code string, id FigureID) bool {
	if code == "late" && MemoryFigure(id) && r.Summary.Late.P99 < LateMovesMemoryMS {
		return false
	}
	return Moves(code, id)
}

// Trust says whether the verdict's claims can be told from the machine's
// noise: which figures its recommendation rests on, which of those the
// suspect runs' warnings move, and how many runs those are.
//
// A claim rests on a figure it states: a sweep's pick on throughput (and
// p95 latency when it cites it), a named comparison on the figures that
// changed significantly (on all it compared when none did: "no
// difference" is a claim about every one), a step's change on its latency,
// a box's cost on its throughput. The paired analysis compares within
// rounds: a busy machine or stolen CPU that hits a round's runs alike falls
// out of the ratio, and what does not widens the round-to-round spread the
// test measures; so TimeOnlyCodes do not count against a paired verdict
// (Absorbed), as they do not against one resting on memory alone (Unmoved).
type Trust struct {
	RestsOn []FigureID `json:"rests_on"`
	// Moved are the figures of RestsOn the counted warnings move.
	Moved []FigureID `json:"moved,omitempty"`
	// Runs of Of carried a counted warning; Codes counts them by code.
	Runs  int            `json:"runs"`
	Of    int            `json:"of"`
	Codes map[string]int `json:"codes,omitempty"`
	// Untrusted: Runs is UntrustedShare of Of or more.
	Untrusted bool `json:"untrusted"`
	// Unmoved counts the runs with warnings that move none of RestsOn (CPU
	// steal under a verdict on memory); Absorbed those the paired analysis
	// absorbs. Neither counts in Runs.
	Unmoved  map[string]int `json:"unmoved,omitempty"`
	Absorbed map[string]int `json:"absorbed,omitempty"`
}

// restsOn lists the figures the verdict's claims rest on, in the order of
// the verdict's tables.
func restsOn(v *Verdict) []FigureID {
	set := map[FigureID]bool{}
	for _, s := range v.Sweeps {
		set[FigureThroughput] = true
		for _, e := range s.Evidence {
			if e.Kind == LowerP95 {
				set[FigureP95] = true
			}
		}
	}
	for _, n := range v.Named {
		any := false
		for _, f := range n.Figures {
			if f.Change.Significant() {
				set[f.ID], any = true, true
			}
		}
		if !any {
			for _, f := range n.Figures {
				set[f.ID] = true
			}
		}
	}
	for _, c := range v.StepChanges {
		set[c.Figure] = true
	}
	if v.Boxes != nil {
		set[FigureThroughput] = true
		if v.Table(FigureCapacity) != nil {
			set[FigureCapacity] = true
		}
	}
	var out []FigureID
	for _, t := range v.Figures {
		if set[t.ID] {
			out = append(out, t.ID)
		}
	}
	return out
}

// trust weighs the suspect runs against the figures the verdict rests on;
// nil when no run is suspect or the verdict claims nothing.
func trust(v *Verdict, results []*result.Result) *Trust {
	rests := restsOn(v)
	if v.Suspect == nil || len(rests) == 0 {
		return nil
	}
	t := &Trust{RestsOn: rests, Codes: map[string]int{}, Unmoved: map[string]int{}, Absorbed: map[string]int{}}
	paired := v.Pairing != nil && v.Pairing.Analysis == Paired
	moved := map[FigureID]bool{}
	for _, r := range results {
		if r == nil {
			continue
		}
		t.Of++
		counted := false
		seen := map[string]bool{}
		for _, w := range r.Validity {
			if !slices.Contains(SuspectCodes, w.Code) || seen[w.Code] {
				continue
			}
			seen[w.Code] = true
			var figs []FigureID
			for _, id := range rests {
				if movesIn(r, w.Code, id) {
					figs = append(figs, id)
				}
			}
			switch {
			case len(figs) == 0:
				t.Unmoved[w.Code]++
			case paired && slices.Contains(TimeOnlyCodes, w.Code):
				t.Absorbed[w.Code]++
			default:
				t.Codes[w.Code]++
				counted = true
				for _, id := range figs {
					moved[id] = true
				}
			}
		}
		if counted {
			t.Runs++
		}
	}
	for _, id := range rests {
		if moved[id] {
			t.Moved = append(t.Moved, id)
		}
	}
	t.Untrusted = t.Of > 0 && float64(t.Runs) >= UntrustedShare*float64(t.Of)
	return t
}
