package main

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/loadlab/loadlab/internal/result"
	"github.com/loadlab/loadlab/internal/store"
)

// TestRenderedTooLargeIsCounted: a header that renders over its bound per
// request (the 200 parts of randomString(1048576)) is not sent:
// each journey fails the check "request within size limits" of its step,
// the run says why, and no request reaches the server.
func TestRenderedTooLargeIsCounted(t *testing.T) {
	t.Parallel()
	url, requests := counting(t)
	path := writePlan(t, map[string]string{"plan.yaml": fmt.Sprintf(`target: %s
steps:
  - get: /
    headers: { X-Big: "%s" }
load: { closed: { vus: 1, iterations: 3 } }
`, url, strings.Repeat("{{ randomString(1048576) }}", 200))})
	out := filepath.Join(t.TempDir(), "out")
	_, stderr, code := cli(context.Background(), t, "run", path, "--out", out, "--no-history")
	if code != 1 || !strings.Contains(stderr, "GET /: header X-Big renders at least 1 MiB, over its limit of 64 KiB") {
		t.Errorf("exit %d: %s", code, stderr)
	}
	r, err := store.ReadResult(out)
	if err != nil {
		t.Fatal(err)
	}
	st := r.Steps[0]
	if st.Name != "GET /" || st.Summary.Checks.Failed != 3 || st.FailedCheck == nil || st.FailedCheck.Check != result.CheckRequestSize {
		t.Errorf("step %q: %d checks failed, first %+v; want 3 of %q", st.Name, st.Summary.Checks.Failed, st.FailedCheck, result.CheckRequestSize)
	}
	if n := requests.Load(); n != 0 {
		t.Errorf("%d requests reached the server", n)
	}
}
