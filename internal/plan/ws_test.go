package plan

import (
	"context"
	"errors"
	"strings"
	"testing"
)

// TestBadWSSteps: each mistake in a ws step is an error at its place in the
// file, before any load.
func TestBadWSSteps(t *testing.T) {
	tests := []struct {
		name, plan, at, want string
	}{
		{"http URL", `
      - ws: http://127.0.0.1:9/cable
        do: [{ send: x }]`, "5:13", `ws: needs a ws:// or wss:// URL, or a path starting with / under target, got "http://127.0.0.1:9/cable"`},
		{"https URL", `
      - ws: https://example.com/
        do: [{ send: x }]`, "5:13", `ws: needs a ws:// or wss:// URL`},
		{"receive without send or timeout", `
      - ws: /cable
        do:
          - receive: { expect: { contains: hi } }`, "7:13", "this receive follows no send, so it waits for a message the server pushes: give it a timeout"},
		{"second receive after one send", `
      - ws: /cable
        do:
          - send: hi
          - receive: {}
          - receive:`, "9:13", "this receive follows no send"},
		{"unknown key in do", `
      - ws: /cable
        do:
          - send: hi
          - recieve: { timeout: 1s }`, "8:13", `unknown key "recieve" in a do: item; did you mean "receive"?`},
		{"unknown key in receive", `
      - ws: /cable
        do:
          - receive: { timeout: 1s, expects: {} }`, "7:37", `unknown key "expects" in receive`},
		{"status in a message expect", `
      - ws: /cable
        do:
          - receive: { timeout: 1s, expect: { status: 200 } }`, "7:47", `unknown key "status" in receive.expect`},
		{"header capture", `
      - ws: /cable
        do:
          - receive: { timeout: 1s, capture: { t: { header: X-T } } }`, "7:48", "capture t: a message has no headers"},
		{"two actions in one item", `
      - ws: /cable
        do:
          - { send: hi, close: {} }`, "7:13", "a do: item does one thing"},
		{"no do", `
      - ws: /cable`, "5:11", "a ws step needs a do: list"},
		{"HTTP keys on a ws step", `
      - ws: /cable
        json: { a: 1 }
        do: [{ close: {} }]`, "6:9", "a ws step takes no json"},
		{"do on an HTTP step", `
      - get: /
        do: [{ close: {} }]`, "6:9", "do: goes with a ws: step"},
		{"bad think", `
      - ws: /cable
        do: [{ think: soon }]`, "6:23", "think must be a duration"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := "target: http://127.0.0.1:9\nscenarios:\n  s:\n    steps:" + tt.plan + "\nload: { closed: { vus: 1, iterations: 1 } }\n"
			_, err := Parse("ws.yaml", []byte(src), Options{})
			var errs Errors
			if !errors.As(err, &errs) {
				t.Fatalf("error %T %v, want positioned errors", err, err)
			}
			for _, e := range errs {
				if strings.HasPrefix(e.Error(), "ws.yaml:"+tt.at+": ") && strings.Contains(e.Msg, tt.want) {
					return
				}
			}
			t.Errorf("got\n%v\nwant at %s: %q", err, tt.at, tt.want)
		})
	}
}

// TestWSReceiveAlone: receive: with no value after a send takes the next
// message, with no error.
func TestWSReceiveAlone(t *testing.T) {
	_, err := Parse("ws.yaml", []byte(`
target: http://127.0.0.1:9
scenarios:
  s:
    steps:
      - ws: /cable
        do:
          - send: hi
          - receive:
          - close:
load: { closed: { vus: 1, iterations: 1 } }
`), Options{})
	if err != nil {
		t.Fatal(err)
	}
}

// TestWSStepCompiles: a ws step's captures are usable by the actions after
// the receive that makes them and by later steps; it takes three engine
// steps, and a threshold may name it.
func TestWSStepCompiles(t *testing.T) {
	p, err := Parse("ws.yaml", []byte(`
target: http://127.0.0.1:9
scenarios:
  s:
    steps:
      - ws: wss://127.0.0.1:9/cable?room={{ vu }}
        name: cable
        do:
          - receive: { timeout: 1s, capture: { tok: { json: $.t } } }
          - send: '{"tok": "{{ tok }}"}'
          - binary: AAEC
          - receive: { expect: { json: { $.ok: "true" } } }
          - think: 1ms..2ms
          - close: {}
      - get: /use?t={{ tok }}
load: { closed: { vus: 1, iterations: 1 } }
thresholds:
  - p95(latency, step=cable) < 100ms
  - 'p95(latency, step="cable handshake") < 1s'
  - 'max(latency, step="cable send") < 1s'
`), Options{})
	if err != nil {
		t.Fatal(err)
	}
	prog, _, err := p.program(context.Background(), ProgramOptions{}, noResolve)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range prog.Steps {
		names = append(names, s.Name)
	}
	if got := strings.Join(names, ", "); got != "cable, cable handshake, cable send, GET /use?t={{ tok }}" {
		t.Fatalf("steps %s", got)
	}
	st := prog.Scenarios[0].Steps[0]
	if st.Socket == nil || st.Request != nil || st.ID != 0 {
		t.Fatalf("ws step %+v", st)
	}
}
