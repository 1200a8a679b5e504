package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// serial is the one list of this package's tests that do not call
// t.Parallel(), each with why. Go runs these one at a time, before any
// parallel test starts, so nothing else of this binary sends load while
// they measure. Every other test calls t.Parallel() first thing
// (TestEveryTestParallelOrSerial holds this), and scripts/test runs the
// package with -parallel 4: most of those tests wait on servers, sleeps
// and fixed-duration runs rather than on the 2 cores. The capacity searches
// are among them: their servers hold N/D requests a second by queueing
// (loadlab target --workers N --delay D), under SLOs of seconds, so a busy
// CPU does not move their answers.
var serial = map[string]string{
	// They measure time, CPU or memory: another test's load would move the
	// figure they assert.
	"TestLatencyIsHonest":           "latency to the tenth of a millisecond",
	"TestOpenLoadShowsStalls":       "open load's lateness against a stalled server",
	"TestOpenJourneysOnSchedule":    "arrivals on schedule",
	"TestTenThousandIdleVUs":        "peak RSS of 10,000 VUs",
	"TestLimitsCPUsScaleThroughput": "throughput against CPU shares, and the load average",
	"TestLimitsCPUQuotaThrottles":   "throughput under a CPU quota",
	"TestMemoryFitPerWorker":        "servers' memory per worker",
	"TestTargetWorkerMemoryOnce":    "a server's memory",
	"TestCapacityByVUs":             "its SLO, avg(latency) < 220ms, is 20 ms over the server's delay",
	"TestDemo":                      "the demo's verdict on real differences, in under two minutes",
	"TestExamples":                  "the recipes' verdicts on real differences",
	"TestSweepVerdict":              "a verdict on a real difference",
	"TestStepVerdictNamesTheStep":   "a verdict on a real difference",
	"TestRepeatAutoRealLoad":        "a verdict on a real difference",
	"TestMatrixFactorThinVsPuma":    "a verdict on a real difference",
	"TestABEndToEnd":                "a verdict on a 3 ms difference",
	"TestABDuetEndToEnd":            "a verdict on a 3 ms difference",
	"TestABPlanDuetEndToEnd":        "a verdict on a 3 ms difference",
	"TestStartAt":                   "how late the load began after --start-at",
	"TestHTTP2OpenLoad":             "300 requests a second on schedule (170 were sent beside four other tests)",
	"TestBodyFileReadOnce":          "bytes the process allocated (beside others: 52.7 MB for a 16 MiB body)",
	"TestBodyFileStreamed":          "peak RSS (beside others: 48.2 MiB over the idle binary's)",
	"TestK8sCluster":                "a deleted pod's merge must say missing within 90 s (CI, beside four other tests: not said in 90 s)",
	"TestCompareBaselineHistory":    "fast runs' p50 against a history's, within 50% (+145% beside four other tests)",

	// The limits tests count this binary's cgroups (loadlab-PID-*): two at
	// once would see each other's.
	"TestLimitsMemoryOOMFailsTheRun":        "counts this binary's cgroups",
	"TestLimitsCgroupsGoneAfterInterrupt":   "counts this binary's cgroups",
	"TestLimitsRefusedBeforeAnyLoad":        "counts this binary's cgroups",
	"TestLimitsCgroupsGoneAfterSIGKILL":     "counts this binary's cgroups",
	"TestLimitsCgroupsGoneAfterServerCrash": "counts this binary's cgroups",

	// They set the process's environment or working directory, which
	// t.Setenv and t.Chdir refuse in a parallel test.
	"TestCIOutputs":                "sets GITHUB_STEP_SUMMARY",
	"TestDashboardTokenInABrowser": "sets LOADLAB_DASHBOARD_TOKEN",
	"TestDashboardOpen":            "sets BROWSER and PATH",
	"TestDashboardAddrWithASpace":  "changes directory",
	"TestHistoryChangePoint":       "changes directory",
	"TestServerSecretsMasked":      "sets a secret's variable",
	"TestServerLogMasked":          "sets a secret's variable",
	"TestImportHAR":                "sets LOADLAB_PASSWORD",
	"TestEngineChoice":             "sets LOADLAB_ENGINE",
	"TestCredentialsNeverStored":   "sets secrets' variables",
	"TestSecretInEveryForm":        "sets LOADLAB_HISTORY",
	"TestMetricsTokenPrinted":      "sets LOADLAB_METRICS_TOKEN",
}

// TestEveryTestParallelOrSerial: each test of the package (on every
// platform: build tags are not read) either starts with t.Parallel() or is
// in serial, and serial names only tests that exist.
func TestEveryTestParallelOrSerial(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("*_test.go")
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	fset := token.NewFileSet()
	for _, name := range files {
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Recv != nil || !strings.HasPrefix(fn.Name.Name, "Test") || fn.Name.Name == "TestMain" {
				continue
			}
			test := fn.Name.Name
			seen[test] = true
			_, isSerial := serial[test]
			parallel := len(fn.Body.List) > 0 && isParallelCall(fn.Body.List[0])
			switch {
			case isSerial && parallel:
				t.Errorf("%s: %s calls t.Parallel() but is in serial (%s)", fset.Position(fn.Pos()), test, serial[test])
			case !isSerial && !parallel:
				t.Errorf("%s: %s must call t.Parallel() first, or be in serial with why", fset.Position(fn.Pos()), test)
			}
		}
	}
	var gone []string
	for name := range serial {
		if !seen[name] {
			gone = append(gone, name)
		}
	}
	sort.Strings(gone)
	if len(gone) > 0 {
		t.Errorf("serial names tests that do not exist: %v", gone)
	}
}

func isParallelCall(s ast.Stmt) bool {
	e, ok := s.(*ast.ExprStmt)
	if !ok {
		return false
	}
	c, ok := e.X.(*ast.CallExpr)
	if !ok || len(c.Args) != 0 {
		return false
	}
	sel, ok := c.Fun.(*ast.SelectorExpr)
	if !ok || sel.Sel.Name != "Parallel" {
		return false
	}
	id, ok := sel.X.(*ast.Ident)
	return ok && id.Name == "t"
}
