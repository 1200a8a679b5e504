package telemetry

import (
	"encoding/json"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/prometheus/prometheus/promql/parser"
)

// TestGrafanaDashboard: docs/grafana/loadlab.json is a dashboard Grafana
// can import (panels placed, each with queries), every query is PromQL
// (once Grafana's variables are put in), and every metric it names is one
// that /metrics serves.
func TestGrafanaDashboard(t *testing.T) {
	data, err := os.ReadFile("../../docs/grafana/loadlab.json")
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Title         string
		UID           string
		SchemaVersion int
		Panels        []struct {
			ID      int
			Type    string
			Title   string
			GridPos struct{ X, Y, W, H int }
			Targets []struct {
				Expr  string
				RefID string
			}
		}
		Templating struct {
			List []struct {
				Name       string
				Type       string
				Definition string
			}
		}
	}
	dec := json.NewDecoder(strings.NewReader(string(data)))
	if err := dec.Decode(&dash); err != nil {
		t.Fatalf("docs/grafana/loadlab.json: %v", err)
	}
	if dash.Title == "" || dash.UID == "" || dash.SchemaVersion == 0 || len(dash.Panels) == 0 {
		t.Fatalf("not a dashboard: title %q, uid %q, schemaVersion %d, %d panels", dash.Title, dash.UID, dash.SchemaVersion, len(dash.Panels))
	}

	// What /metrics serves, read from a real scrape of a run with a step and
	// a server under test.
	live := New()
	live.RunStarted()
	live.Interval(steps, interval(10, 3))
	live.Server(50, 1<<20)
	srv, err := Serve("127.0.0.1:0", live, "")
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	served := map[string]bool{}
	for k := range scrape(t, "http://"+srv.Addr+"/metrics") {
		name, _, _ := strings.Cut(k, ",")
		served[name] = true
	}
	servedName := func(n string) bool {
		for _, suffix := range []string{"", "_bucket", "_sum", "_count"} {
			if base, ok := strings.CutSuffix(n, suffix); ok && served[base] {
				return true
			}
		}
		return false
	}

	vars := strings.NewReplacer("$__rate_interval", "1m", "$__interval", "1m", "$job", ".+", "$instance", ".+")
	p := parser.NewParser(parser.Options{})
	check := func(where, expr string) {
		e, err := p.ParseExpr(vars.Replace(expr))
		if err != nil {
			t.Errorf("%s: %q is not PromQL: %v", where, expr, err)
			return
		}
		named := 0
		parser.Inspect(e, func(n parser.Node, _ []parser.Node) error {
			if vs, ok := n.(*parser.VectorSelector); ok {
				named++
				if !servedName(vs.Name) {
					t.Errorf("%s: %q names %s, which /metrics does not serve", where, expr, vs.Name)
				}
			}
			return nil
		})
		if named == 0 {
			t.Errorf("%s: %q names no metric", where, expr)
		}
	}
	seen := map[int]bool{}
	for _, panel := range dash.Panels {
		where := "panel " + panel.Title
		if panel.Type == "" || panel.Title == "" || panel.GridPos.W == 0 || panel.GridPos.H == 0 || seen[panel.ID] {
			t.Errorf("%s: type %q, grid %+v, id %d (unique?): not a panel Grafana places", where, panel.Type, panel.GridPos, panel.ID)
		}
		seen[panel.ID] = true
		if len(panel.Targets) == 0 {
			t.Errorf("%s: no query", where)
		}
		for _, q := range panel.Targets {
			check(where, q.Expr)
		}
	}
	labelValues := regexp.MustCompile(`^label_values\((.+), *\w+\)$`)
	for _, v := range dash.Templating.List {
		if v.Type != "query" {
			continue
		}
		m := labelValues.FindStringSubmatch(v.Definition)
		if m == nil {
			t.Errorf("variable %s: %q is not label_values(SELECTOR, LABEL)", v.Name, v.Definition)
			continue
		}
		check("variable "+v.Name, m[1])
	}
}
