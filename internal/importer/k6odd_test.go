package importer

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/loadlab/loadlab/internal/plan"
)

// TestK6OddScripts: scripts that misuse k6's API or options convert
// without a panic, into a plan that loads, or into an ErrScript.
func TestK6OddScripts(t *testing.T) {
	for _, js := range []string{"", "// hi\n", "export default 5;\n", "import http from 'k6/http';\nexport default function(){ http.get() }\n",
		"import http from 'k6/http';\nexport default function(){ http.request(); http.request(1, 'x'); http.get('http://a/', 5); }\n",
		"import http from 'k6/http';\nimport {check, group, sleep} from 'k6';\nexport default function(){ check(); group(); sleep(); sleep('x'); const r = http.get('http://a/'); check(r, 5); check(r, {a: 1, b: r => r.status > 1}); }\n",
		"import http from 'k6/http';\nexport const options = { thresholds: 5, scenarios: 7, stages: 'x' };\nexport default function(){ http.get('http://a/') }\n",
		"import http from 'k6/http';\nexport const options = { scenarios: { a: 5, b: { executor: 'ramping-vus' }, c: {executor: 'constant-arrival-rate'} }, thresholds: { 'http_req_duration{x:y}': 'p(95)<1', checks: ['rate==1', 5, {threshold: 5}], http_reqs: ['p(9)<'] } };\nexport default function(){ http.get('http://a/') }\n",
		"import http from 'k6/http';\nconst opts = {vus: 2, duration: '1s'};\nexport const options = opts;\nexport default () => { http.get('http://a/' + __ITER * 2 + `x${__ENV.Y}`) }\n",
		"import * as http from 'k6/http';\nimport { SharedArray as SA } from 'k6/data';\nconst d = new SA('x', () => JSON.parse(open('nope.json')));\nconst e = new SA('y');\nexport default function(){ const row = d[__ITER]; http.get(`http://a/${row.x}`) }\n",
		"export { a as b };\nimport def, { x } from 'k6';\n",
	} {
		res, err := K6("z.js", []byte(js), Options{})
		if err != nil {
			if !errors.Is(err, ErrScript) {
				t.Errorf("%q: %v, want an ErrScript", js, err)
			}
			continue
		}
		if len(res.NotConverted) == 0 && !strings.Contains(js, "opts") {
			t.Errorf("%q: nothing listed as not converted", js)
		}
		for _, src := range [][]byte{res.Plan, res.CheckPlan} {
			if _, err := plan.Parse(filepath.Join(t.TempDir(), "z.yaml"), src, plan.Options{Env: map[string]string{"Y": "y"}}); err != nil {
				t.Errorf("%q: the plan does not load: %v\n%s", js, err, src)
			}
		}
	}
}
