package runner

import (
	"fmt"
	"net"
	"net/url"
	"sort"
	"strings"
	"time"

	"github.com/loadlab/loadlab/internal/plan"
	"github.com/loadlab/loadlab/internal/result"
	"github.com/loadlab/loadlab/internal/secret"
	"github.com/loadlab/loadlab/internal/server"
)

// planFingerprint is what a plan's run measures: its load as rendered for
// this run (an experiment point's params filled in), its requests as
// written, its target, and the server command it started (spec is nil
// when it starts none). It is written as quick mode's is, so that a plan
// of one scenario and quick mode doing the same compare alike: "GET /",
// "10 VUs for 30s".
func planFingerprint(p *plan.Plan, spec *server.Spec) *result.Fingerprint {
	f := &result.Fingerprint{Workload: string(p.Load.Kind), Shape: shape(&p.Load), Plan: p.Fingerprint()}
	if p.PerScenario() {
		// Each scenario's load is a part of the shape: "signup: open
		// 12/s for 1m, at most 20 VUs; browse: closed 500 VUs for 1m".
		var shapes []string
		for _, sc := range p.Scenarios {
			shapes = append(shapes, fmt.Sprintf("%s: %s %s", sc.Name, sc.Load.Kind, shape(sc.Load)))
		}
		f.Workload, f.Shape = "per scenario", strings.Join(shapes, "; ")
	}
	origins := map[string]bool{}
	for _, sc := range p.Scenarios {
		for _, st := range sc.Steps {
			if st.IsThink {
				continue
			}
			path := st.URL.Written()
			step := st.Method + " " + p.MaskSecrets(secret.URL(path))
			if g := st.Group; g != nil {
				// Sent at once with others: a load of another shape.
				step += fmt.Sprintf(" (parallel %q, max %d)", g.Name, g.Max)
			}
			switch {
			case p.PerScenario():
				step = sc.Name + ": " + step // its load is in the shape
			case len(p.Scenarios) > 1:
				// The mix is a part of the load: each scenario's weight.
				step = fmt.Sprintf("%s (weight %d): %s", sc.Name, sc.Weight, step)
			}
			f.Steps = append(f.Steps, step)
			if p.Target == nil && !strings.Contains(path, "{{") {
				if u, err := url.Parse(path); err == nil && u.Host != "" {
					origins[origin(u)] = true
				}
			}
		}
	}
	if p.Target != nil {
		f.Target = origin(p.Target)
	} else {
		list := make([]string, 0, len(origins))
		for o := range origins {
			list = append(list, o)
		}
		sort.Strings(list)
		f.Target = strings.Join(list, ", ")
	}
	if spec != nil {
		f.Server = serverLine(spec, p)
	}
	f.Hash = f.Sum()
	return f
}

// quickFingerprint is quick mode's: one request, again and again, by
// connections that are its VUs (each sends when its last response came, in
// closed load).
func quickFingerprint(q QuickRun) *result.Fingerprint {
	s := q.Settings
	f := &result.Fingerprint{Workload: s.Mode, Target: origin(q.URL)}
	path := q.URL.EscapedPath()
	if path == "" {
		path = "/"
	}
	if q.URL.RawQuery != "" {
		path += "?" + q.URL.RawQuery
	}
	f.Steps = []string{q.Method + " " + secret.URL(path)}
	switch {
	case s.Mode == "open":
		f.Shape = fmt.Sprintf("%s/s", num(s.Rate))
		if s.Duration > 0 {
			f.Shape += " for " + time.Duration(s.Duration).String()
		}
		if s.Connections > 0 {
			f.Shape += fmt.Sprintf(", at most %d VUs", s.Connections)
		}
	case s.Requests > 0:
		f.Shape = fmt.Sprintf("%d VUs, %d requests in all", s.Connections, s.Requests)
	default:
		f.Shape = fmt.Sprintf("%d VUs for %s", s.Connections, time.Duration(s.Duration))
	}
	if s.Streams > 0 {
		// -c counts HTTP/2 connections, each with --streams in flight: not
		// the same load as -c HTTP/1.1 connections.
		f.Shape += fmt.Sprintf(", HTTP/2 with %d streams a connection", s.Streams)
	}
	f.Hash = f.Sum()
	return f
}

// shape says how much load and for how long, in the plan's terms.
func shape(l *plan.Workload) string {
	switch l.Kind {
	case plan.LoadClosed:
		out := fmt.Sprintf("%d VUs", l.VUs)
		if l.Iterations > 0 {
			out += fmt.Sprintf(", %d iterations each", l.Iterations)
		}
		if l.Duration > 0 {
			out += " for " + l.Duration.String()
		}
		return out
	case plan.LoadOpen:
		return fmt.Sprintf("%s for %s, at most %d VUs", l.Rate, l.Duration, l.MaxVUs)
	case plan.LoadRampVUs:
		parts := []string{fmt.Sprintf("from %d VUs", l.StartVUs)}
		for _, s := range l.VUStages {
			parts = append(parts, fmt.Sprintf("%d over %s", s.Target, s.Over))
		}
		return strings.Join(parts, ", ")
	case plan.LoadRampRate:
		parts := []string{"from " + l.StartRate.String()}
		for _, s := range l.RateStages {
			parts = append(parts, fmt.Sprintf("%s over %s", s.Target, s.Over))
		}
		return strings.Join(parts, ", ") + fmt.Sprintf(", at most %d VUs", l.MaxVUs)
	}
	return ""
}

// origin is scheme://host:port, the port written even when it is the
// scheme's default, so that http://a and http://a:80 are one origin.
func origin(u *url.URL) string {
	port := u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[u.Scheme]
	}
	return u.Scheme + "://" + net.JoinHostPort(u.Hostname(), port)
}

// serverLine is the server's command line in full, after its environment,
// secrets masked.
func serverLine(spec *server.Spec, p *plan.Plan) string {
	var parts []string
	names := make([]string, 0, len(spec.Env))
	for name := range spec.Env {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		parts = append(parts, name+"="+quote(secret.Header(name, spec.Env[name])))
	}
	if spec.Shell != "" {
		parts = append(parts, spec.Shell)
	} else {
		for _, a := range spec.Argv {
			parts = append(parts, quote(a))
		}
	}
	return p.MaskSecrets(strings.Join(parts, " "))
}

func quote(s string) string {
	if s == "" || strings.ContainsAny(s, " \t\n'\"\\$") {
		return fmt.Sprintf("%q", s)
	}
	return s
}

func num(x float64) string {
	return strings.TrimSuffix(strings.TrimRight(fmt.Sprintf("%.3f", x), "0"), ".")
}
