package capacity

import "testing"

// TestRecordSaysTheStateOnce: a step's series word reads "steady: 40/s ...",
// not "steady: steady: 40/s ..." (issue 27), while a reason that does not
// start with its state keeps it in front.
func TestRecordSaysTheStateOnce(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		j    Judgement
		want string
	}{
		{Judgement{Steady, "steady: 40/s, no upward trend in the last 5 s"}, "steady: 40/s, no upward trend in the last 5 s"},
		{Judgement{Growing, "throughput 30/s in the last 5 s, under 90% of 40/s"}, "growing: throughput 30/s in the last 5 s, under 90% of 40/s"},
		{Judgement{State: Unsettled}, "unsettled"},
	} {
		if got := Record(1, Outcome{}, nil, StepReport{Judgement: tt.j}, "").Series; got != tt.want {
			t.Errorf("Series = %q, want %q", got, tt.want)
		}
	}
}
