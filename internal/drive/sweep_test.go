package drive

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/loadlab/loadlab/internal/plan"
)

// TestSweepSeedsTheRuns: the seed an experiment.experiment prints reaches every run's
// templates, so that the same seed, given as seed:, sends the same bodies
// again, run for run.
func TestSweepSeedsTheRuns(t *testing.T) {
	var mu sync.Mutex
	var bodies []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		bodies = append(bodies, string(b))
		mu.Unlock()
	}))
	t.Cleanup(srv.Close)
	src := `
target: ` + srv.URL + `
steps: [ { post: "/?n={{ n }}", body: "{{ randomString(12) }} {{ randomInt(0, 1000000) }}" } ]
load: { closed: { vus: 1, iterations: 3 } }
params: { n: [1, 2] }
repeat: 2
`
	sweep := func(src string) (uint64, []string) {
		t.Helper()
		bodies = nil
		p, err := plan.Parse("plan.yaml", []byte(src), plan.Options{})
		if err != nil {
			t.Fatal(err)
		}
		load := func(params map[string]any) (*plan.Plan, error) {
			return plan.Parse("plan.yaml", []byte(src), plan.Options{Params: params})
		}
		out, err := Sweep(context.Background(), p, load, p.Fingerprint(), SweepOptions{Dir: t.TempDir(), Workers: 1})
		if err != nil {
			t.Fatal(err)
		}
		if len(bodies) != 12 {
			t.Fatalf("%d requests, want 12", len(bodies))
		}
		return out.Seed, bodies
	}
	seed, first := sweep(src)
	again, second := sweep(src + fmt.Sprintf("seed: %d\n", seed))
	if again != seed {
		t.Fatalf("seed %d, then %d", seed, again)
	}
	if strings.Join(first, "\n") != strings.Join(second, "\n") {
		t.Errorf("seed %d sent\n%s\nthen\n%s", seed, strings.Join(first, "\n"), strings.Join(second, "\n"))
	}
}
