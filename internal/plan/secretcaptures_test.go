package plan

import (
	"context"
	"slices"
	"testing"
)

// TestCapturedSecrets: the values of captures named as credentials (csrf,
// session_token) and of captures a credential header is made from, even
// through a variable, are the VU's secrets, masked in the failing responses
// kept; other captures are not.
func TestCapturedSecrets(t *testing.T) {
	p, err := Parse("plan.yaml", []byte(`
target: http://127.0.0.1:9
vars: { bearer: "Bearer {{ t }}" }
steps:
  - get: /form
    capture:
      csrf: { css: "input[name=authenticity_token]", attr: value }
      heading: { css: h1 }
      t: { json: "$.t" }
      session_token: { header: X-Session }
      k: { json: "$.k" }
  - get: /me
    headers: { Authorization: "{{ bearer }}", X-Api-Key: "{{ k }}", Accept: "{{ heading }}" }
load: { closed: { vus: 1, iterations: 1 } }
`), Options{})
	if err != nil {
		t.Fatal(err)
	}
	_, r, err := p.program(context.Background(), ProgramOptions{}, noResolve)
	if err != nil {
		t.Fatal(err)
	}
	s := r.NewState()
	for _, name := range []string{"csrf", "heading", "t", "session_token", "k"} {
		s.Vars().Set(r.Scope.Slot(name), name+"-value")
	}
	got := r.Secrets(s, nil)
	slices.Sort(got)
	want := []string{"csrf-value", "k-value", "session_token-value", "t-value"}
	if !slices.Equal(got, want) {
		t.Errorf("secrets %q, want %q", got, want)
	}
}

// TestCapturedDerivedSecrets: a value a template makes from a captured
// credential with a function (upper(session_token)) is one of the VU's
// secrets, as the capture itself is, and so is one made from any capture
// and a secret variable; one made from another capture alone is not.
func TestCapturedDerivedSecrets(t *testing.T) {
	t.Parallel()
	p, err := Parse("plan.yaml", []byte(`
target: http://127.0.0.1:9
vars: { pw: { value: pw-secret-1, secret: true } }
steps:
  - get: /login
    capture: { session_token: { json: "$.t" }, heading: { css: h1 } }
  - get: /me
    headers: { X-Sig: "{{ upper(session_token) }}", X-Heading: "{{ upper(heading) }}", X-Mix: "{{ heading + '/' + pw }}" }
load: { closed: { vus: 1, iterations: 1 } }
`), Options{})
	if err != nil {
		t.Fatal(err)
	}
	_, r, err := p.program(context.Background(), ProgramOptions{}, noResolve)
	if err != nil {
		t.Fatal(err)
	}
	s := r.NewState()
	s.Vars().Set(r.Scope.Slot("session_token"), "tok-abcdef")
	s.Vars().Set(r.Scope.Slot("heading"), "welcome")
	got := r.Secrets(s, nil)
	slices.Sort(got)
	if want := []string{"TOK-ABCDEF", "tok-abcdef", "welcome/pw-secret-1"}; !slices.Equal(got, want) {
		t.Errorf("secrets %q, want %q", got, want)
	}
}
