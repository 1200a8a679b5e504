package suggest

import "testing"

func TestDistance(t *testing.T) {
	tests := []struct {
		a, b string
		want int
	}{
		{"", "", 0},
		{"latency", "latency", 0},
		{"latncy", "latency", 1},
		{"latnecy", "latency", 1}, // a swap is one slip
		{"", "abc", 3},
		{"µs", "us", 1},
		{"kitten", "sitting", 3},
	}
	for _, tt := range tests {
		t.Run(tt.a+"/"+tt.b, func(t *testing.T) {
			if got := Distance(tt.a, tt.b); got != tt.want {
				t.Errorf("Distance(%q, %q) = %d, want %d", tt.a, tt.b, got, tt.want)
			}
		})
	}
}

func TestClosest(t *testing.T) {
	known := []string{"scenarios", "steps", "target", "thresholds", "load"}
	for in, want := range map[string]string{"scenarioss": "scenarios", "targte": "target", "thres": "thresholds", "lod": "load", "xyz": "", "Steps": "steps"} {
		if got := Closest(in, known); got != want {
			t.Errorf("Closest(%q) = %q, want %q", in, got, want)
		}
	}
}
