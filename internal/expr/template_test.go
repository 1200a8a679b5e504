package expr

import (
	"errors"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// journeyScope is a scope like a plan's: constants, the VU number and
// iteration, a feeder row and a capture.
func journeyScope(t testing.TB) (*Scope, map[string]int) {
	s := NewScope()
	s.Const("base", "/shop")
	s.Const("env.TOKEN", "secret")
	slots := map[string]int{}
	for _, name := range []string{"vu", "iteration", "users.email", "users.name", "token"} {
		slots[name] = s.Slot(name)
	}
	s.SlotType(slots["vu"], 0)
	s.SlotType(slots["iteration"], 0)
	return s, slots
}

// TestValuesSetAfterFirstRunAreSeen: expressions see every Set and Clear
// made after the environment was first built, including dotted names.
func TestValuesSetAfterFirstRunAreSeen(t *testing.T) {
	s, slots := journeyScope(t)
	tpl, err := s.Compile(`{{ base }}/{{ iteration + 1 }}/{{ users.email + "|" + token }}/{{ env.TOKEN }}`)
	if err != nil {
		t.Fatal(err)
	}
	st := s.NewState()
	for i, want := range []string{"/shop/1/a@x|t0/secret", "/shop/2/b@x|t1/secret", "/shop/3/c@x|t2/secret"} {
		st.Set(slots["iteration"], i)
		st.Set(slots["users.email"], string(rune('a'+i))+"@x")
		st.Set(slots["token"], "t"+string(rune('0'+i)))
		got, err := tpl.String(st)
		if err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Errorf("iteration %d: %q, want %q", i, got, want)
		}
		st.Clear([]int{slots["token"]})
		if _, err := tpl.String(st); err == nil {
			t.Errorf("iteration %d: a cleared slot evaluated without error", i)
		}
	}
}

// TestStatesAreIndependent: two VUs' values never mix.
func TestStatesAreIndependent(t *testing.T) {
	s, slots := journeyScope(t)
	tpl, err := s.Compile(`{{ vu * 10 + iteration }}`)
	if err != nil {
		t.Fatal(err)
	}
	a, b := s.NewState(), s.NewState()
	for _, st := range []*State{a, b} {
		st.Set(slots["iteration"], 0)
	}
	a.Set(slots["vu"], 1)
	b.Set(slots["vu"], 2)
	for i := range 3 {
		a.Set(slots["iteration"], i)
		ga, _ := tpl.Eval(a)
		gb, _ := tpl.Eval(b)
		if ga != 10+i || gb != 20 {
			t.Fatalf("step %d: a=%v b=%v, want %d and 20", i, ga, gb, 10+i)
		}
	}
}

// TestOverlappingNamesKeepTheLastWord: a slot "a" and a slot "a.b" cannot
// both live in the environment; whichever the scope put last wins, as it did
// when the environment was rebuilt for every evaluation.
func TestOverlappingNamesKeepTheLastWord(t *testing.T) {
	s := NewScope()
	a := s.Slot("a")
	ab := s.Slot("a.b")
	tpl, err := s.Compile(`{{ a.b + "!" }}`)
	if err != nil {
		t.Fatal(err)
	}
	st := s.NewState()
	st.Set(a, "whole")
	st.Set(ab, "x")
	if got, err := tpl.String(st); err != nil || got != "x!" {
		t.Fatalf("%q, %v; want x!", got, err)
	}
	st.Set(a, "again")
	st.Set(ab, "y")
	if got, err := tpl.String(st); err != nil || got != "y!" {
		t.Fatalf("%q, %v; want y!", got, err)
	}
}

// BenchmarkTemplateIteration is one iteration of a journey's templates: the
// per-iteration slots change, then two expressions and a lookup run.
func BenchmarkTemplateIteration(b *testing.B) {
	s, slots := journeyScope(b)
	exprs := []string{`/cart/{{ iteration + 1 }}`, `{{ users.email }}`, `{{ "Bearer " + token }}`}
	var tpls []*Template
	for _, src := range exprs {
		tpl, err := s.Compile(src)
		if err != nil {
			b.Fatal(err)
		}
		tpls = append(tpls, tpl)
	}
	st := s.NewState()
	st.Set(slots["vu"], 7)
	var buf []byte
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		st.Set(slots["iteration"], i&127)
		st.Set(slots["users.email"], "a@example.com")
		st.Set(slots["token"], "abc")
		for _, tpl := range tpls {
			var err error
			if buf, err = tpl.Append(buf[:0], st); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// TestUnknownFunction: a misspelt function is named with the nearest known
// one, built-in or loadlab's.
func TestUnknownFunction(t *testing.T) {
	s := NewScope()
	s.Const("name", "x")
	for src, want := range map[string]string{
		`{{ upperr(name) }}`:     "unknown function upperr(); did you mean upper()?",
		`{{ randomInit(1, 2) }}`: "unknown function randomInit(); did you mean randomInt()?",
	} {
		if _, err := s.Compile(src); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", src, err, want)
		}
	}
}

var uuidV4 = regexp.MustCompile(`"id": "[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}"`)

// TestRandomIsSeeded: randomInt, randomString and uuid draw from the
// State's generator, so the same seed gives the same text and another seed
// another.
func TestRandomIsSeeded(t *testing.T) {
	sc := NewScope()
	tpl, err := sc.Compile(`{"n": {{ randomInt(1, 1000000) }}, "s": "{{ randomString(16) }}", "u": "{{ upper(randomString(8)) }}", "id": "{{ uuid() }}"}`)
	if err != nil {
		t.Fatal(err)
	}
	body := func(seed, stream uint64) string {
		st := sc.NewState()
		st.Seed(seed, stream)
		var out []string
		for range 3 {
			s, err := tpl.String(st)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, s)
		}
		return strings.Join(out, "\n")
	}
	a, b := body(42, 7), body(42, 7)
	if !uuidV4.MatchString(a) {
		t.Errorf("no version 4 UUID in\n%s", a)
	}
	if a != b {
		t.Errorf("the same seed gave\n%s\nand\n%s", a, b)
	}
	if c := body(43, 7); c == a {
		t.Errorf("seeds 42 and 43 gave the same bodies:\n%s", a)
	}
	if c := body(42, 8); c == a {
		t.Errorf("streams 7 and 8 gave the same bodies:\n%s", a)
	}
}

// TestReads: a slot is read when a template names it, directly or in an
// expression (also by its first part, users["email"]), or reads $env; the
// mark is shared with the scope's clones.
func TestReads(t *testing.T) {
	for _, tt := range []struct {
		src  string
		want []string
	}{
		{"{{ vu }}", []string{"vu"}},
		{"{{ iteration + 1 }}", []string{"iteration"}},
		{`{{ users["email"] }}`, []string{"users.email"}},
		{"{{ randomInt(1, 3) }}", nil}, // $env is passed for its generator, no slot
		{`{{ $env["iter" + "ation"] }}`, []string{"vu", "iteration", "users.email"}},
		{"plain", nil},
	} {
		t.Run(tt.src, func(t *testing.T) {
			s := NewScope()
			slots := map[string]int{}
			for _, name := range []string{"vu", "iteration", "users.email"} {
				slots[name] = s.Slot(name)
			}
			s.SlotType(slots["vu"], 0)
			s.SlotType(slots["iteration"], 0)
			if _, err := s.Clone().Compile(tt.src); err != nil {
				t.Fatal(err)
			}
			for name, i := range slots {
				if got, want := s.Reads(i), slices.Contains(tt.want, name); got != want {
					t.Errorf("Reads(%s) = %v, want %v", name, got, want)
				}
			}
		})
	}
}

// TestUnsetCaptureInAnExpression: an expression that calls a function on a
// capture that found nothing (split(location, '/')[4] after a POST that
// answered 422) fails with the capture's UnsetError, in words, never with
// the Go type error of the function given nil; an expression that copes
// with nil itself still runs.
func TestUnsetCaptureInAnExpression(t *testing.T) {
	t.Parallel()
	s := NewScope()
	loc := s.Slot("issue_location")
	st := s.NewState()
	for _, src := range []string{`/issues/{{ split(issue_location, '/')[4] }}`, `{{ upper(issue_location) }}`, `{{ split(issue_location, '/')[4] }}`} {
		tpl, err := s.Compile(src)
		if err != nil {
			t.Fatal(err)
		}
		st.Set(loc, nil)
		var got error
		if tpl.whole {
			_, got = tpl.Eval(st)
		} else {
			_, got = tpl.String(st)
		}
		var unset *UnsetError
		if !errors.As(got, &unset) || unset.Name != "issue_location" || strings.Contains(got.Error(), "interface") {
			t.Errorf("%s with issue_location unset: %v, want issue_location's UnsetError", src, got)
		}
		st.Set(loc, "http://127.0.0.1:1/issues/7/x")
		if _, err := tpl.String(st); err != nil {
			t.Errorf("%s with issue_location set: %v", src, err)
		}
	}
	tpl, err := s.Compile(`{{ issue_location ?? "none" }}`)
	if err != nil {
		t.Fatal(err)
	}
	st.Set(loc, nil)
	if got, err := tpl.String(st); err != nil || got != "none" {
		t.Errorf("issue_location ?? \"none\" unset: %q, %v", got, err)
	}
}
