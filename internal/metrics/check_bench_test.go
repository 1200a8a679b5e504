package metrics

import "testing"

// BenchmarkCheck is the cost of counting one check's outcome: the step's
// totals and, sized by CountChecks, the check's own counts.
func BenchmarkCheck(b *testing.B) {
	r := NewRecorder(2)
	r.CountChecks([]int{0, 5})
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		r.Check(1, i&3, i&7 != 0)
		i++
	}
	if c := r.Steps[1].Checks; c.Passed+c.Failed != int64(i) || r.Steps[1].ByCheck[1].Passed == 0 {
		b.Fatalf("%+v after %d checks", c, i)
	}
}
