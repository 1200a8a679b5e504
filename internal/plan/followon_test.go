package plan

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestNoFollowOnErrors: a problem is said once, where it is. A data source
// that cannot be read is not reported again at every template that uses it
// (undefined variable "users.email"), and a file nested too deeply gets one
// positioned error, not a second one without a place.
func TestNoFollowOnErrors(t *testing.T) {
	deep := "vars:\n  a:\n"
	for i := range 150 {
		deep += strings.Repeat("  ", i+2) + "k:\n"
	}
	tests := []struct {
		name, plan, want string
	}{
		{"csv-missing", "data: { users: { csv: nope.csv } }\n", "cannot open"},
		{"csv-empty", "data: { users: { csv: empty.csv } }\n", "is empty"},
		{"csv-no-rows", "data: { users: { csv: headeronly.csv } }\n", "has a header but no rows"},
		{"csv-not-given", "data: { users: { pick: unique } }\n", "expected csv: FILE"},
		{"csv-bad-key", "data: { users: { csvv: users.csv } }\n", `unknown key "csvv"`},
		{"deep", deep, "YAML nested too deeply"},
	}
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "empty.csv"), nil, 0o644)
	os.WriteFile(filepath.Join(dir, "headeronly.csv"), []byte("email,password\n"), 0o644)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(dir, tt.name+".yaml")
			os.WriteFile(path, []byte(tt.plan+`target: http://127.0.0.1:9
steps:
  - post: "/login?u={{ users.email }}"
    json: { email: "{{ users.email }}", n: "{{ users['password'] + 'x' }}" }
load: { closed: { vus: 1, iterations: 1 } }
`), 0o644)
			_, err := Load(path, Options{})
			var errs Errors
			if !errors.As(err, &errs) {
				t.Fatalf("got %v, want plan errors", err)
			}
			want := 1
			if tt.name == "csv-not-given" || tt.name == "csv-bad-key" {
				want = len(errs) // the source's own errors; none about templates
			}
			for _, e := range errs {
				if strings.Contains(e.Msg, "undefined variable") || e.Pos.Line == 0 {
					t.Errorf("a follow-on error: %v", e)
				}
			}
			if len(errs) != want || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("got %d errors:\n%v\nwant %d saying %q", len(errs), err, want, tt.want)
			}
		})
	}
}
