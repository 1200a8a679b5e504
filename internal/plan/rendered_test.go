package plan

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/loadlab/loadlab/internal/engine"
)

// renderedPlan is a one-step plan whose step (the text after "- ") the
// tests of rendered limits replace; extra goes at the end.
func renderedPlan(step, extra string) string {
	return "target: http://127.0.0.1:9\nsteps:\n  - " + step + "\nload: { closed: { vus: 1, iterations: 1 } }\n" + extra
}

// TestRenderedLimitsWhenTheyLoad: a header, URL or body whose text is
// fixed when the plan loads (literal, or made of plan variables, params
// and the environment only) and is over its bound, or cannot be sent (a
// line break in a header, a % that is not an escape, port 99999), is a
// positioned error naming the step and the field, before any load; and
// an expression of constants that fails (int("x"), an index out of range)
// fails there too, not at the first request.
func TestRenderedLimitsWhenTheyLoad(t *testing.T) {
	t.Parallel()
	big := `{{ repeat("h", 70000) }}`
	tests := []struct {
		name, plan string
		env        map[string]string
		at, want   string
	}{
		{"header", renderedPlan(`get: /`+"\n    headers: { X-Big: '"+big+"' }", ""), nil, "4:23", "GET /: the header X-Big is 68.4 KiB, over its limit of 64 KiB (raise it with http.max_request_header"},
		{"plan-header", renderedPlan(`get: /`, "http: { headers: { X-Big: '"+big+"' } }\n"), nil, "5:27", "GET /: the header X-Big is 68.4 KiB, over its limit of 64 KiB"},
		{"url", renderedPlan(`get: '/{{ repeat("u", 9000) }}'`, ""), nil, "3:10", "GET /{{ repeat(\"u\", 9000) }}: the URL is 8.8 KiB, over its limit of 8 KiB (raise it with http.max_url"},
		{"query", renderedPlan(`get: /`+"\n    query: { q: '{{ repeat(\"é\", 3000) }}' }", ""), nil, "4:17", "GET /: the query q is 17.6 KiB, over its limit of 8 KiB"},
		{"body", renderedPlan(`post: /`+"\n    body: '{{ b }}'", "http: { max_request_body: 64B }\nvars: { b: "+strings.Repeat("b", 100)+" }\n"), nil, "4:11", "POST /: the body is 100 bytes, over its limit of 64 bytes (raise it with http.max_request_body"},
		{"form", renderedPlan(`post: /`+"\n    form: { a: '{{ b }}' }", "http: { max_request_body: 64B }\nvars: { b: "+strings.Repeat("b", 100)+" }\n"), nil, "4:16", "POST /: the form a is 100 bytes, over its limit of 64 bytes"},
		{"json", renderedPlan(`post: /`+"\n    json: { a: '{{ b }}' }", "http: { max_request_body: 64B }\nvars: { b: "+strings.Repeat("b", 100)+" }\n"), nil, "4:11", "POST /: the json body is 108 bytes, over its limit of 64 bytes"},
		{"crlf-env", renderedPlan(`get: /`+"\n    headers: { X-Note: '{{ env.NOTE }}' }", ""), map[string]string{"NOTE": "a\r\nX-Injected: 1"}, "4:24", "GET /: header X-Note: the value has a line break"},
		{"percent", renderedPlan(`get: /a%zz`, ""), nil, "3:10", `GET /a%zz: the URL has "%zz", which is not a %XX escape`},
		{"percent-var", renderedPlan(`get: /a{{ p }}`, "vars: { p: '%4' }\n"), nil, "3:10", `the URL has "%4", which is not a %XX escape`},
		{"target-port", "target: http://127.0.0.1:{{ port }}\nvars: { port: 99999 }\nsteps: [ { get: / } ]\nload: { closed: { vus: 1, iterations: 1 } }\n", nil, "1:9", `target "http://127.0.0.1:99999": port 99999 is not a port: expected 1 to 65535`},
		{"step-port", renderedPlan(`get: http://127.0.0.1:70000/`, ""), nil, "3:10", "port 70000 is not a port"},
		{"int", renderedPlan(`get: '/?n={{ int(p) }}'`, "vars: { p: x }\n"), nil, "3:18", "in {{ int(p) }}: invalid operation: int(x)"},
		{"index", renderedPlan(`get: '/?n={{ [10, 20][p] }}'`, "vars: { p: 2 }\n"), nil, "3:18", "in {{ [10, 20][p] }}: index out of range: 2 (array length is 2)"},
		{"bad-limit", renderedPlan(`get: /`, "http: { max_request_header: 2GiB }\n"), nil, "5:29", "http.max_request_header must be from 256 bytes to 1 MiB, got 2GiB"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			began := time.Now()
			_, err := Parse("plan.yaml", []byte(tt.plan), Options{Env: tt.env})
			if took := time.Since(began); took > 2*time.Second {
				t.Errorf("loading took %v", took)
			}
			var errs Errors
			if !errors.As(err, &errs) || len(errs) == 0 {
				t.Fatalf("error %T %v, want positioned plan errors", err, err)
			}
			for _, e := range errs {
				if strings.HasPrefix(e.Error(), "plan.yaml:"+tt.at) && strings.Contains(e.Msg, tt.want) {
					return
				}
			}
			t.Errorf("got\n%.2000s\nwant an error at %s saying %q", err, tt.at, tt.want)
		})
	}
}

// TestRenderedLimitsRaised: what a bound refuses, a raised bound takes;
// and expressions of constants that work keep their type and value.
func TestRenderedLimitsRaised(t *testing.T) {
	t.Parallel()
	for _, plan := range []string{
		renderedPlan(`get: /`+"\n    headers: { X-Big: '{{ repeat(\"h\", 70000) }}' }", "http: { max_request_header: 128KiB }\n"),
		renderedPlan(`get: '/{{ repeat("u", 9000) }}'`, "http: { max_url: 16KiB }\n"),
		renderedPlan(`post: /`+"\n    json: { a: '{{ int(p) * 2 }}', b: '{{ [10, 20][i] }}' }", "vars: { p: '21', i: 1 }\n"),
	} {
		if _, err := Parse("plan.yaml", []byte(plan), Options{}); err != nil {
			t.Errorf("%.500v\nplan:\n%s", err, plan)
		}
	}
	p, err := Parse("plan.yaml", []byte(renderedPlan(`post: /`+"\n    json: { a: '{{ int(p) * 2 }}', b: '{{ [10, 20][i] }}' }", "vars: { p: '21', i: 1 }\n")), Options{})
	if err != nil {
		t.Fatal(err)
	}
	req := build(t, p)
	if !strings.HasSuffix(req, `{"a":42,"b":20}`) {
		t.Errorf("the request is %q, want the body {\"a\":42,\"b\":20}", req)
	}
}

// build compiles a plan and builds its first step's request for a VU.
func build(t *testing.T, p *Plan) string {
	t.Helper()
	req, err := buildErr(p)
	if err != nil {
		t.Fatal(err)
	}
	return req
}

func buildErr(p *Plan) (string, error) {
	prog, r, err := p.program(context.Background(), ProgramOptions{}, noResolve)
	if err != nil {
		return "", err
	}
	s := r.NewState()
	if err := r.Begin(s, 0, 0, prog.Scenarios[0]); err != nil {
		return "", err
	}
	req, err := prog.Scenarios[0].Steps[0].Request.Build(&engine.VU{State: s}, nil)
	return string(req), err
}

// TestRenderedLimitsAtRunTime: a header, URL or body that changes per
// request and is over its bound is not sent: Build fails with
// engine.ErrRequestTooLarge, naming the part and the bound, having
// rendered little more than the bound (the 200 MB header of 200 parts of
// randomString(1048576) stops after its first MiB).
func TestRenderedLimitsAtRunTime(t *testing.T) {
	t.Parallel()
	parts := strings.Repeat("{{ randomString(1048576) }}", 200)
	for _, tt := range []struct{ name, step, extra, want string }{
		{"header", "get: /\n    headers: { X-Big: '" + parts + "' }", "", "header X-Big renders at least 1 MiB, over its limit of 64 KiB"},
		{"url", "get: '/{{ randomString(9000) }}'", "", "URL renders at least 8.8 KiB, over its limit of 8 KiB"},
		{"query", "get: /\n    query: { q: '{{ randomString(5000) }}', r: '{{ randomString(5000) }}' }", "", "URL renders at least 9.8 KiB, over its limit of 8 KiB"},
		{"body", "post: /\n    body: '" + parts + "'", "", "body renders at least 17 MiB, over its limit of 16 MiB"},
		{"form", "post: /\n    form: { a: '{{ randomString(600) }}', b: '{{ randomString(600) }}' }", "http: { max_request_body: 1KiB }\n", "body renders at least 1.2 KiB, over its limit of 1 KiB"},
		{"json", "post: /\n    json: { a: '{{ randomString(2000) }}' }", "http: { max_request_body: 1KiB }\n", "body renders at least 2.0 KiB, over its limit of 1 KiB"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p, err := Parse("plan.yaml", []byte(renderedPlan(tt.step, tt.extra)), Options{})
			if err != nil {
				t.Fatal(err)
			}
			req, err := buildErr(p)
			if !errors.Is(err, engine.ErrRequestTooLarge) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Build: %v (request of %d bytes), want engine.ErrRequestTooLarge saying %q", err, len(req), tt.want)
			}
		})
	}
}

// TestRepeatBounded: repeat() stops before it makes more text than the
// largest bound, instead of allocating 200 MiB (or a terabyte) first.
func TestRepeatBounded(t *testing.T) {
	t.Parallel()
	p, err := Parse("plan.yaml", []byte(renderedPlan(`post: /`+"\n    body: '{{ repeat(randomString(1048576), 200) }}'", "")), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := buildErr(p); err == nil || !strings.Contains(err.Error(), "repeat: 200 copies of 1 MiB would be over 16 MiB") {
		t.Fatalf("Build: %v", err)
	}
}

// TestDataBounds: a CSV data source of too many columns, or with a row too
// wide, is refused where the plan names it, within a second.
func TestDataBounds(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cols := make([]string, MaxDataColumns+1)
	for i := range cols {
		cols[i] = "c" + strconv.Itoa(i)
	}
	for _, tt := range []struct{ name, csv, want string }{
		{"columns", strings.Join(cols, ",") + "\n" + strings.Repeat("1,", MaxDataColumns) + "1\n", "has 1,001 columns; the most is 1,000"},
		{"wide-header", "a" + strings.Repeat("b", MaxDataRowBytes) + "\n1\n", "line 1 is over 1 MiB, the widest row loadlab takes"},
		{"wide-row", "a\nx\n" + strings.Repeat("y", MaxDataRowBytes+1) + "\n", "line 3 is over 1 MiB"},
		{"wide-quoted-row", "a\n\"" + strings.Repeat("y\n", MaxDataRowBytes/2+1) + "\"\n", "a row of 1 MiB; the widest row is 1 MiB"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			sub := filepath.Join(dir, tt.name)
			os.MkdirAll(sub, 0o755)
			os.WriteFile(filepath.Join(sub, "d.csv"), []byte(tt.csv), 0o644)
			path := filepath.Join(sub, "plan.yaml")
			os.WriteFile(path, []byte("data: { users: { csv: d.csv } }\n"+limitPlan("{ closed: { vus: 1, iterations: 1 } }", "")), 0o644)
			began := time.Now()
			_, err := Load(path, Options{})
			if took := time.Since(began); took > time.Second {
				t.Errorf("refusing took %v", took)
			}
			if err == nil || !strings.Contains(err.Error(), path+":1:23: data source users: ") || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("got %.500v, want %q", err, tt.want)
			}
		})
	}
}

// TestRenderedFromData: a header, URL or body made of data columns is
// checked against every row before load: a value with a line break in a
// header, or a row that makes it over its bound, is an error at the
// template's place naming the source and the row.
func TestRenderedFromData(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "d.csv"), []byte("token,path\nabc,a\n\"x\r\nX-Evil: 1\",b\nok,"+strings.Repeat("p", 9000)+"\n"), 0o644)
	for _, tt := range []struct{ step, want string }{
		{"get: /\n    headers: { X-T: 'Bearer {{ d.token }}' }", ":5:21: GET /: header X-T: column token of data source d, row 2: the value has a line break"},
		{"get: '/{{ d.path }}'", ":4:10: GET /{{ d.path }}: the URL renders up to 8.8 KiB with data source d's row 3, over its limit of 8 KiB"},
		{"post: /\n    body: '{{ d.token }}{{ d.path }}'", ":5:11: POST /: the body renders up to 8.8 KiB with data source d's row 3, over its limit of 1 KiB"},
	} {
		path := filepath.Join(dir, "plan.yaml")
		os.WriteFile(path, []byte("data: { d: { csv: d.csv } }\n"+renderedPlan(tt.step, "http: { max_request_body: 1KiB }\n")), 0o644)
		if _, err := Load(path, Options{}); err == nil || !strings.Contains(err.Error(), path+tt.want) {
			t.Errorf("%s: got %v, want %q", tt.step, err, tt.want)
		}
	}
}

// TestRenderedChecksAtSet: a --set value goes through the same checks as
// the plan's own text: one that makes int() fail, a header with a line
// break or a port out of range is refused when the plan loads.
func TestRenderedChecksAtSet(t *testing.T) {
	t.Parallel()
	plan := "target: http://127.0.0.1:{{ port }}\nvars: { p: '1', port: 9, note: a }\nsteps:\n  - get: '/?n={{ int(p) }}'\n    headers: { X-N: '{{ note }}' }\nload: { closed: { vus: 1, iterations: 1 } }\n"
	if _, err := Parse("plan.yaml", []byte(plan), Options{}); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct{ set, want string }{
		{"vars.p=x", "plan.yaml:4:18: in {{ int(p) }}: invalid operation: int(x)"},
		{`vars.note="a\r\nX-Evil: 1"`, "plan.yaml:5:21: GET /?n={{ int(p) }}: header X-N: the value has a line break"},
		{"vars.port=99999", "port 99999 is not a port"},
		{"http.max_url=1GiB", "http.max_url must be from 256 bytes to 1 MiB"},
	} {
		if _, err := Parse("plan.yaml", []byte(plan), Options{Set: []string{tt.set}}); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("--set %s: got %v, want %q", tt.set, err, tt.want)
		}
	}
}
