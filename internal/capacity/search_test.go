package capacity

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"testing"
)

// server is a simulated step: rates up to capacity hold; flaky lists the
// step numbers (1-based) that break whatever their rate, as a noisy
// machine might; stops gives a step's Stop.
type server struct {
	capacity float64
	flaky    map[int]bool
	stops    map[int]Stop
	vus      bool // steps by VUs (Options.VUs)
}

func (s server) step(n int, d Decision) Outcome {
	o := Outcome{Rate: d.Rate, Phase: d.Phase, Holds: d.Rate <= s.capacity && !s.flaky[n], Stop: s.stops[n]}
	if s.vus {
		o.Rate, o.VUs = 0, int(d.Rate)
	}
	if !o.Holds {
		o.Clause = "p95(latency) < 300ms"
	}
	return o
}

// drive runs the controller against s to its answer.
func drive(t *testing.T, o Options, s server) (Answer, []Outcome) {
	t.Helper()
	var steps []Outcome
	full, err := o.WithDefaults()
	if err != nil {
		t.Fatal(err)
	}
	for {
		d, err := Next(o, steps)
		if err != nil {
			t.Fatal(err)
		}
		if d.Done {
			if len(steps) > full.MaxSteps() {
				t.Errorf("%d steps, over the %d stated", len(steps), full.MaxSteps())
			}
			return d.Answer, steps
		}
		if len(steps) > 100 {
			t.Fatalf("no answer after %d steps:%s", len(steps), rates(steps))
		}
		steps = append(steps, s.step(len(steps)+1, d))
	}
}

func rates(steps []Outcome) string {
	s := ""
	for _, st := range steps {
		mark := "+"
		if !st.Holds {
			mark = "-"
		}
		s += fmt.Sprintf(" %s%g%s", st.Phase[:1], st.level(), mark)
	}
	return s
}

func TestSearchSequence(t *testing.T) {
	a, steps := drive(t, Options{Start: 50, Confirm: 3}, server{capacity: 410})
	want := " g50+ g100+ g200+ g400+ g800- b600- b500- b450- b425- b412.5- b406.3+ c406.3+ c406.3+ c406.3+"
	if got := rates(steps); got != want {
		t.Errorf("steps\n%s\nwant\n%s", got, want)
	}
	if a.Rate != 406.3 || a.AtLeast || a.Above != 412.5 || a.Limit != 9 || a.Confirmed != 3 || a.Confirms != 3 || a.Note != "" {
		t.Errorf("answer %+v", a)
	}
	if !reflect.DeepEqual(a.AtAnswer, []int{10, 11, 12, 13}) {
		t.Errorf("steps at the answer %v", a.AtAnswer)
	}
	if got := (Options{Factor: 2, Precision: 0.02, Confirm: 3, MaxGrow: 10, StepDowns: 1}).MaxSteps(); got != 22 {
		t.Errorf("MaxSteps %d, want 10 + 6 + 3·2", got)
	}
}

// TestSearchFindsKnownCapacity: for servers of many capacities and starts,
// the answer is within the precision below the capacity.
func TestSearchFindsKnownCapacity(t *testing.T) {
	for _, start := range []float64{1, 7, 50, 333} {
		for _, capacity := range []float64{start * 1.01, start * 1.5, start * 3.7, start * 100, start * 257} {
			for _, precision := range []float64{0.01, 0.02, 0.05} {
				t.Run(fmt.Sprintf("start %g capacity %g precision %g", start, capacity, precision), func(t *testing.T) {
					a, steps := drive(t, Options{Start: start, Precision: precision, Confirm: 3}, server{capacity: capacity})
					// 4 significant digits cost at most 0.05% more.
					if a.Rate > capacity || (capacity-a.Rate)/a.Rate > precision+0.001 || a.AtLeast || a.Confirmed != 3 {
						t.Errorf("answer %+v for capacity %g:%s", a, capacity, rates(steps))
					}
				})
			}
		}
	}
}

func TestSearchEnds(t *testing.T) {
	for _, tc := range []struct {
		name  string
		opts  Options
		s     server
		steps string
		want  Answer
	}{
		{
			name: "even the first rate breaks", opts: Options{Start: 100}, s: server{capacity: 50},
			steps: " g100-", want: Answer{Above: 100, Limit: 0, Note: "even the first rate, 100/s, broke the SLO"},
		},
		{
			name: "every rate holds", opts: Options{Start: 1, MaxGrow: 3}, s: server{capacity: 1000},
			steps: " g1+ g2+ g4+", want: Answer{Rate: 4, AtLeast: true, Limit: -1, AtAnswer: []int{2}, Note: "every rate held up to 4/s after 3 growth steps"},
		},
		{
			name: "loadlab saturates while growing", opts: Options{Start: 100}, s: server{capacity: 1000, stops: map[int]Stop{3: GeneratorSaturated}},
			steps: " g100+ g200+ g400+",
			want:  Answer{Rate: 400, AtLeast: true, Limit: -1, AtAnswer: []int{2}, Note: "loadlab itself was saturated at 400/s: it cannot offer more here, so the capacity is at least the answer"},
		},
		{
			name: "the server crashes", opts: Options{Start: 100}, s: server{capacity: 150, stops: map[int]Stop{2: ServerCrashed}},
			steps: " g100+ g200-",
			want:  Answer{Rate: 100, Above: 200, Limit: 1, AtAnswer: []int{0}, Note: "the server under test crashed at 200/s"},
		},
		{
			name: "a confirm repeat breaks: step down", opts: Options{Start: 100, Precision: 0.05, Confirm: 3}, s: server{capacity: 127, flaky: map[int]bool{8: true}},
			steps: " g100+ g200- b150- b125+ b137.5- b131.3- b128.2- c125- c118.8+ c118.8+ c118.8+",
			want:  Answer{Rate: 118.8, Above: 125, Limit: 7, Confirmed: 3, Confirms: 3, AtAnswer: []int{8, 9, 10}, Note: "a confirm repeat at 125/s broke: stepped down to 118.8/s"},
		},
		{
			name: "confirms keep breaking", opts: Options{Start: 100, Precision: 0.05, Confirm: 3, StepDowns: 1}, s: server{capacity: 127, flaky: map[int]bool{8: true, 10: true}},
			steps: " g100+ g200- b150- b125+ b137.5- b131.3- b128.2- c125- c118.8+ c118.8-",
			want:  Answer{Rate: 118.8, Above: 125, Limit: 7, Confirmed: 1, Confirms: 2, AtAnswer: []int{8}, Note: "unconfirmed: a confirm repeat at 118.8/s broke after 1 step-down(s)"},
		},
		{
			name: "no confirm", opts: Options{Start: 100, Precision: 0.05}, s: server{capacity: 1e9},
			steps: " g100+ g200+ g400+ g800+ g1600+ g3200+ g6400+ g12800+ g25600+ g51200+",
			want:  Answer{Rate: 51200, AtLeast: true, Limit: -1, AtAnswer: []int{9}, Note: "every rate held up to 5.12e+04/s after 10 growth steps"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, steps := drive(t, tc.opts, tc.s)
			if got := rates(steps); got != tc.steps {
				t.Errorf("steps\n%s\nwant\n%s", got, tc.steps)
			}
			if !reflect.DeepEqual(a, tc.want) {
				t.Errorf("answer\n%+v\nwant\n%+v", a, tc.want)
			}
		})
	}
}

// TestSearchReplays: the kept steps of an interrupted search lead to the
// same next step; steps made with other options are refused.
func TestSearchReplays(t *testing.T) {
	_, steps := drive(t, Options{Start: 50, Confirm: 3}, server{capacity: 410})
	for n := range steps {
		d, err := Next(Options{Start: 50, Confirm: 3}, steps[:n])
		if err != nil || d.Done || d.Rate != steps[n].Rate || d.Phase != steps[n].Phase {
			t.Fatalf("after %d steps: %+v, %v; want step %+v", n, d, err, steps[n])
		}
	}
	if _, err := Next(Options{Start: 50, Confirm: 3, Factor: 3}, steps); !errors.Is(err, ErrReplay) {
		t.Errorf("replayed with another factor: %v, want ErrReplay", err)
	}
	for _, bad := range []Options{{Start: 0}, {Start: 1, Precision: -0.1}, {Start: 1, Precision: 0.0001}, {Start: 1, Factor: 1}, {Start: 1, Confirm: -1}} {
		if _, err := Next(bad, nil); err == nil {
			t.Errorf("Next(%+v): no error", bad)
		}
	}
}

// TestSearchByVUs: a search over a closed load's VU count steps by whole
// VUs, ends its bisection when the bracket is one VU wide (or within the
// precision), and steps a confirm that broke down by at least one VU.
func TestSearchByVUs(t *testing.T) {
	a, steps := drive(t, Options{Start: 4, Confirm: 3, VUs: true}, server{capacity: 37, vus: true})
	if got, want := rates(steps), " g4+ g8+ g16+ g32+ g64- b48- b40- b36+ b38- b37+ c37+ c37+ c37+"; got != want {
		t.Errorf("steps\n%s\nwant\n%s", got, want)
	}
	if a.Rate != 37 || a.Above != 38 || a.Limit != 8 || a.Confirmed != 3 || a.Note != "" {
		t.Errorf("answer %+v", a)
	}
	for _, st := range steps {
		if st.Rate != 0 || st.VUs < 1 {
			t.Errorf("step %+v: want VUs, no rate", st)
		}
	}
	a, steps = drive(t, Options{Start: 2, Confirm: 2, VUs: true}, server{capacity: 5, vus: true, flaky: map[int]bool{7: true}})
	if got, want := rates(steps), " g2+ g4+ g8- b6- b5+ c5+ c5- c4+ c4+"; got != want || a.Rate != 4 || a.Note != "a confirm repeat at 5 VUs broke: stepped down to 4 VUs" {
		t.Errorf("steps %s, answer %+v", got, a)
	}
	a, _ = drive(t, Options{Start: 1, Confirm: 1, VUs: true}, server{capacity: 0.5, vus: true})
	if a.Rate != 0 || a.Note != "even the first VU count, 1 VUs, broke the SLO" {
		t.Errorf("answer %+v", a)
	}
	for _, start := range []float64{1, 3, 10, 64} {
		for _, capacity := range []float64{start, start + 1, start * 3.7, start * 100} {
			t.Run(fmt.Sprintf("start %g capacity %g", start, capacity), func(t *testing.T) {
				a, steps := drive(t, Options{Start: start, Confirm: 1, VUs: true}, server{capacity: capacity, vus: true})
				if a.Rate != math.Round(a.Rate) || a.Rate > capacity || capacity-a.Rate >= math.Max(1, 0.02*a.Rate) || a.AtLeast {
					t.Errorf("answer %+v for %g VUs:%s", a, capacity, rates(steps))
				}
			})
		}
	}
	if _, err := Next(Options{Start: 2.5, VUs: true}, nil); err == nil {
		t.Error("2.5 VUs to start from: no error")
	}
	// A search by rate does not replay steps by VUs.
	if _, err := Next(Options{Start: 2}, steps[:1]); !errors.Is(err, ErrReplay) {
		t.Errorf("steps by VUs replayed by rate: %v", err)
	}
}
