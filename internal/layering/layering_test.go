package layering

import (
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

const mod = "github.com/loadlab/loadlab/internal/"

// analysis is the analysis tower: packages that read results and decide.
var analysis = []string{"experiment", "capacity", "history", "report", "stats", "cost", "threshold", "metrics", "result", "store", "chart", "spec"}

// engineSide is what the analysis must never reach. plan is among them
// because it holds the compiler beside the schema (journey programs, the
// server's and the limits' settings): the analysis reads the schema's
// experiment section from internal/spec instead.
var engineSide = []string{"runner", "drive", "engine", "httpx", "journey", "server", "limits", "target", "plan"}

// graph is loadlab's own import graph: package (short name) to the loadlab
// packages its non-test files import, on every platform (build tags are
// not read: a Windows-only import counts too). It parses the files itself
// rather than asking go list, so that go test's cache sees what it read.
func graph(t *testing.T) map[string][]string {
	t.Helper()
	g := map[string][]string{}
	root := filepath.Join("..")
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != root && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		rel, err := filepath.Rel(root, filepath.Dir(path))
		if err != nil {
			return err
		}
		name := filepath.ToSlash(rel)
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		if _, ok := g[name]; !ok {
			g[name] = nil
		}
		for _, imp := range f.Imports {
			q, _ := strconv.Unquote(imp.Path.Value)
			if strings.HasPrefix(q, mod) && !slices.Contains(g[name], strings.TrimPrefix(q, mod)) {
				g[name] = append(g[name], strings.TrimPrefix(q, mod))
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// reach returns the packages that from imports, directly or not, with the
// chain of imports to each.
func reach(g map[string][]string, from string) map[string][]string {
	paths := map[string][]string{from: {from}}
	queue := []string{from}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, q := range g[p] {
			if _, seen := paths[q]; !seen {
				paths[q] = append(slices.Clone(paths[p]), q)
				queue = append(queue, q)
			}
		}
	}
	return paths
}

// TestAnalysisDoesNotLinkTheEngine: no package of the analysis tower
// reaches the engine side by any chain of imports. A failure names the
// chain.
func TestAnalysisDoesNotLinkTheEngine(t *testing.T) {
	t.Parallel()
	g := graph(t)
	for _, a := range analysis {
		if _, ok := g[a]; !ok {
			t.Errorf("internal/%s is gone: update the analysis list", a)
			continue
		}
		for p, path := range reach(g, a) {
			if slices.Contains(engineSide, p) {
				t.Errorf("internal/%s links internal/%s of the engine side: %s", a, p, strings.Join(path, " → "))
			}
		}
	}
}

// TestOnlyCmdUsesDrive: drive joins the towers, so nothing below cmd
// imports it (an analysis that did would link the engine).
func TestOnlyCmdUsesDrive(t *testing.T) {
	t.Parallel()
	for p, imps := range graph(t) {
		if slices.Contains(imps, "drive") {
			t.Errorf("internal/%s imports internal/drive: only cmd/loadlab does", p)
		}
	}
}
