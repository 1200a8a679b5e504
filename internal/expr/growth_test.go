package expr

import (
	"strings"
	"testing"
	"time"
)

// TestGrowthBounded: an expression that builds a value far larger than
// what it returns (a string doubled in reduce, a thousand copies joined,
// random text appended in a loop, replace made to multiply) fails at once
// with the budget's error, where before each ran to the end (reduce over
// 1..40 doubling, 1 TB, until the process died), and the render's bound
// applied only to the result. Scaled down with SetMaxText(64 KiB), a
// budget of 1 MiB, so that the cases end before the fix too, and fail.
// Expressions that make little pass.
func TestGrowthBounded(t *testing.T) {
	t.Parallel()
	s := NewScope()
	s.Const("s", strings.Repeat("x", 60<<10))
	s.SetMaxText(64 << 10)
	for _, src := range []string{
		`{{ len(reduce(1..25, #acc + #acc, "x")) }}`,
		`{{ len(join(map(1..100, s), "")) }}`,
		`{{ len(reduce(1..100, #acc + randomString(65536), "")) }}`,
		`{{ len(map(1..100, s + s)) }}`,
		`{{ len(s + s + s + s + s + s + s + s + s + s + s + s + s + s + s + s + s + s + s + s) }}`,
		`{{ len(join([s, s, s, s, s, s, s, s, s, s, s, s, s, s, s, s, s, s, s, s], "")) }}`,
		`{{ len(replace(replace(s, "x", "yyyy"), "y", "zz")) }}`,
		`{{ len(toJSON(map(1..40, s))) }}`,
	} {
		tpl, err := s.Compile(src)
		if err != nil {
			if !strings.Contains(err.Error(), "on its way") && !strings.Contains(err.Error(), "would make over") {
				t.Errorf("%s: %v", src, err)
			}
			continue // constant: refused when it compiles
		}
		st := s.NewState()
		began := time.Now()
		out, err := tpl.Append(nil, st)
		if took := time.Since(began); took > time.Second {
			t.Errorf("%s: took %v", src, took)
		}
		if err == nil || !strings.Contains(err.Error(), "on its way") && !strings.Contains(err.Error(), "would make over") {
			t.Errorf("%s: %q, %v: want the budget's error", src, out, err)
		}
	}
	for src, want := range map[string]string{
		`{{ len(join(map(1..1000, string(# * 2)), ",")) }}`:  "4447",
		`{{ reduce(1..1000, #acc + #, 0) }}`:                 "500500",
		`{{ len(reduce(1..10, #acc + "ab", "")) }}`:          "20",
		`{{ len(replace(s, "x", "yy")) }}`:                   "", // 120 KiB: over 64 KiB, by repeat's rule
		`{{ upper(replace("a-b-c", "-", "+")) }}`:            "A+B+C",
		`{{ len(randomString(1000) + randomString(1000)) }}`: "2000",
	} {
		tpl, err := s.Compile(src)
		if want == "" {
			if err == nil {
				_, err = tpl.Append(nil, s.NewState())
			}
			if err == nil || !strings.Contains(err.Error(), "would make over") {
				t.Errorf("%s: %v, want replace's error", src, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", src, err)
			continue
		}
		out, err := tpl.Append(nil, s.NewState())
		if err != nil || string(out) != want {
			t.Errorf("%s = %q, %v; want %s", src, out, err, want)
		}
	}
}
