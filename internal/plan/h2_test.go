package plan

import (
	"strings"
	"testing"
)

func TestHTTPVersion(t *testing.T) {
	tests := []struct {
		http    string
		want    int
		wantErr string
	}{
		{"{}", 0, ""},
		{"{ version: 1.1 }", 0, ""},
		{"{ version: 2 }", 2, ""},
		{`{ version: "2" }`, 2, ""},
		{"{ version: h2 }", 2, ""},
		{"{ version: 3 }", 1, `p.yaml:2:18: http.version must be 1.1 or 2, got "3"`},
		{"{ version: [2] }", 1, "p.yaml:2:18: http.version must be 1.1 or 2, got a list"},
		{"{ version: 2, keepalive: false }", 2, "p.yaml:2:32: http.keepalive: false does not go with http.version: 2"},
	}
	for _, tt := range tests {
		t.Run(tt.http, func(t *testing.T) {
			src := "target: http://127.0.0.1:1\nhttp: " + tt.http + "\nsteps:\n  - get: /\nload:\n  closed: { vus: 1, iterations: 1 }\n"
			p, err := Parse("p.yaml", []byte(src), Options{})
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if p.HTTP.Version != tt.want {
				t.Errorf("version %d, want %d", p.HTTP.Version, tt.want)
			}
		})
	}
}
