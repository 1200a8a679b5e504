package main

import (
	"context"
	"encoding/xml"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/loadlab/loadlab/internal/target"
	"github.com/loadlab/loadlab/internal/target/targettest"
)

type junitDoc struct {
	Tests    int `xml:"tests,attr"`
	Failures int `xml:"failures,attr"`
	Suites   []struct {
		Name  string `xml:"name,attr"`
		Cases []struct {
			Name    string `xml:"name,attr"`
			Failure *struct {
				Message string `xml:"message,attr"`
				Text    string `xml:",chardata"`
			} `xml:"failure"`
		} `xml:"testcase"`
	} `xml:"testsuite"`
}

// TestCIOutputs: --junit has a test case per threshold and per step's
// checks, failures saying measured against wanted; the job summary gets the
// markdown report with Mermaid charts.
func TestCIOutputs(t *testing.T) {
	if testing.Short() {
		t.Skip("a 2 s run and an experiment of two 1 s runs")
	}
	url := targettest.Start(t, target.Options{})
	dir := t.TempDir()
	plan := filepath.Join(dir, "plan.yaml")
	os.WriteFile(plan, []byte(`name: ci-shop
target: `+url+`
steps:
  - get: /
    name: home
    expect: { status: 200 }
  - get: /
    name: missing
    expect: { status: 201 }
load: { closed: { vus: 2, duration: 2s } }
thresholds:
  - p95(latency) < 10s
  - p50(latency) < 1us
`), 0o644)
	summary := filepath.Join(dir, "summary.md")
	os.WriteFile(summary, []byte("# earlier step\n"), 0o644)
	t.Setenv("GITHUB_STEP_SUMMARY", summary)
	junit := filepath.Join(dir, "junit.xml")
	_, stderr, code := cli(context.Background(), t, "run", plan, "--junit", junit)
	if code != 3 {
		t.Fatalf("exit %d, want 3 (p50 < 1us fails): %s", code, stderr)
	}
	data, err := os.ReadFile(junit)
	if err != nil {
		t.Fatal(err)
	}
	var doc junitDoc
	if err := xml.Unmarshal(data, &doc); err != nil {
		t.Fatalf("%v:\n%s", err, data)
	}
	cases := map[string]string{}
	for _, s := range doc.Suites {
		for _, c := range s.Cases {
			cases[c.Name] = ""
			if c.Failure != nil {
				cases[c.Name] = "FAIL " + c.Failure.Message
			}
		}
	}
	if doc.Tests < 4 || cases["threshold p95(latency) < 10s"] != "" || !strings.HasPrefix(cases["threshold p50(latency) < 1us"], "FAIL p50(latency) < 1us failed: ") ||
		cases["checks of home"] != "" || !strings.Contains(cases["checks of missing"], "checks failed") {
		t.Errorf("junit cases %v\n%s", cases, data)
	}
	md, _ := os.ReadFile(summary)
	if !strings.HasPrefix(string(md), "# earlier step\n## ci-shop") || strings.Count(string(md), "```mermaid\nxychart-beta") < 2 ||
		!strings.Contains(string(md), "| threshold | verdict | measured |") || strings.Contains(string(md), ".png") {
		t.Errorf("job summary:\n%s", md)
	}

	// An experiment: a suite per run.
	os.WriteFile(summary, nil, 0o644)
	exp := filepath.Join(dir, "exp.yaml")
	os.WriteFile(exp, []byte("name: ci-sweep\ntarget: "+url+"\nsteps: [ { get: / } ]\nload: { closed: { vus: '{{ vus }}', duration: 1s } }\nparams: { vus: [1, 2] }\nrepeat: 1\n"), 0o644)
	if _, stderr, code := cli(context.Background(), t, "run", exp, "--junit", junit, "--out", filepath.Join(dir, "exp")); code != 0 {
		t.Fatalf("experiment: exit %d: %s", code, stderr)
	}
	data, _ = os.ReadFile(junit)
	doc = junitDoc{}
	if err := xml.Unmarshal(data, &doc); err != nil || len(doc.Suites) != 2 || !strings.HasPrefix(doc.Suites[0].Name, "ci-sweep run 1 (") {
		t.Errorf("experiment junit (%v):\n%s", err, data)
	}
	if md, _ := os.ReadFile(summary); !strings.Contains(string(md), "## ci-sweep") || !strings.Contains(string(md), "xychart-beta") {
		t.Errorf("experiment job summary:\n%s", md)
	}
	// A --junit that cannot be written fails a run that passed.
	if _, stderr, code := cli(context.Background(), t, "run", "--url", url+"/", "-n", "5", "-c", "1", "--junit", filepath.Join(dir, "none", "j.xml")); code != 1 || !strings.Contains(stderr, "--junit") {
		t.Errorf("unwritable --junit: exit %d, %q", code, stderr)
	}
}
