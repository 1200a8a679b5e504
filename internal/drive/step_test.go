package drive

import (
	"testing"

	"github.com/loadlab/loadlab/internal/plan"
)

func TestRequestsPerJourney(t *testing.T) {
	t.Parallel()
	p, err := plan.Parse("p.yaml", []byte(`
target: http://127.0.0.1:1
scenarios:
  browse: { weight: 3, steps: [ { get: / }, { think: 1s }, { get: /a }, { get: /b } ] }
  buy: { weight: 1, steps: [ { get: /cart } ] }
load: { open: { rate: 10/s, duration: 5s, max_vus: 20 } }
`), plan.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got := RequestsPerJourney(p); got != 2.5 { // (3×3 + 1×1) / 4
		t.Errorf("RequestsPerJourney = %v, want 2.5", got)
	}
}
