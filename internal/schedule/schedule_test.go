package schedule

import (
	"testing"
	"time"
)

func TestConstantCountsExactly(t *testing.T) {
	tests := []struct {
		name  string
		rate  Rate
		d     time.Duration
		total int64
	}{
		{"1000/s for 10s", Rate{Count: 1000, Per: time.Second}, 10 * time.Second, 10000},
		{"7000 in 10 minutes", Rate{Count: 7000, Per: 10 * time.Minute}, 10 * time.Minute, 7000},
		{"700 in 60s", Rate{Count: 700, Per: time.Minute}, time.Minute, 700},
		{"3/s for 1.5s", Rate{Count: 3, Per: time.Second}, 1500 * time.Millisecond, 5}, // 0, 1/3, 2/3, 1, 4/3
		{"0.5/s for 3s", Rate{Count: 0.5, Per: time.Second}, 3 * time.Second, 2},       // 0, 2
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o, err := Constant(tt.rate, tt.d)
			if err != nil {
				t.Fatal(err)
			}
			if o.Total() != tt.total {
				t.Fatalf("Total = %d, want %d", o.Total(), tt.total)
			}
			prev := time.Duration(-1)
			for i := range o.Total() {
				due, ok := o.Due(i)
				if !ok || due <= prev || due >= tt.d {
					t.Fatalf("Due(%d) = %v, %v after %v", i, due, ok, prev)
				}
				prev = due
			}
			if _, ok := o.Due(o.Total()); ok {
				t.Fatalf("Due(%d) exists past the end", o.Total())
			}
		})
	}
}

func TestConstantDueTimes(t *testing.T) {
	o, _ := Constant(Rate{Count: 7000, Per: 10 * time.Minute}, 10*time.Minute)
	for _, tt := range []struct {
		i    int64
		want time.Duration
	}{{0, 0}, {1, 600 * time.Second / 7000}, {3500, 300 * time.Second}, {6999, 599914285714}} {
		if got, _ := o.Due(tt.i); got != tt.want {
			t.Errorf("Due(%d) = %v, want %v", tt.i, got, tt.want)
		}
	}
}

func TestStages(t *testing.T) {
	// 0/s, ramp to 200/s over 2m, hold 5m: 12,000 + 60,000 arrivals.
	o, err := Stages(Rate{Count: 0, Per: time.Second}, []Stage{
		{Rate{Count: 200, Per: time.Second}, 2 * time.Minute},
		{Rate{Count: 200, Per: time.Second}, 5 * time.Minute},
	})
	if err != nil {
		t.Fatal(err)
	}
	if o.Total() != 72000 {
		t.Fatalf("Total = %d, want 72000", o.Total())
	}
	if o.Duration() != 7*time.Minute {
		t.Fatalf("Duration = %v", o.Duration())
	}
	// In a linear ramp from 0, n arrivals are due by t where 200·t²/(2·120) = n.
	due, _ := o.Due(3000) // 200 t² / 240 = 3000 → t = 60s
	if d := due - 60*time.Second; d < -time.Millisecond || d > time.Millisecond {
		t.Errorf("Due(3000) = %v, want 60s", due)
	}
	due, _ = o.Due(12000 + 200*60) // a minute into the hold
	if d := due - 3*time.Minute; d < -time.Millisecond || d > time.Millisecond {
		t.Errorf("Due(24000) = %v, want 3m", due)
	}
	prev := time.Duration(-1)
	for i := range o.Total() {
		due, ok := o.Due(i)
		if !ok || due < prev || due > o.Duration() {
			t.Fatalf("Due(%d) = %v after %v", i, due, prev)
		}
		prev = due
	}
	if r := o.RateAt(time.Minute); r < 99.9 || r > 100.1 {
		t.Errorf("RateAt(1m) = %v, want 100", r)
	}
}

func TestBadSchedules(t *testing.T) {
	if _, err := Constant(Rate{Count: 0, Per: time.Second}, time.Second); err == nil {
		t.Error("zero rate accepted")
	}
	if _, err := Constant(Rate{Count: -5, Per: time.Second}, time.Second); err == nil {
		t.Error("negative rate accepted")
	}
	if _, err := Constant(Rate{Count: 5, Per: time.Second}, 0); err == nil {
		t.Error("zero duration accepted")
	}
	if _, err := Stages(Rate{Count: 0, Per: time.Second}, []Stage{{Rate{Count: 0, Per: time.Second}, time.Minute}}); err == nil {
		t.Error("all-zero stages accepted")
	}
	if _, err := NewRamp(0, []VUStage{{10, 0}}); err == nil {
		t.Error("zero-length VU stage accepted")
	}
}

func TestRamp(t *testing.T) {
	r, err := NewRamp(0, []VUStage{{10, 10 * time.Second}, {10, 5 * time.Second}, {0, 10 * time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		t    time.Duration
		want int
	}{{0, 0}, {time.Second, 1}, {5 * time.Second, 5}, {10 * time.Second, 10}, {12 * time.Second, 10}, {20 * time.Second, 5}, {25 * time.Second, 0}, {time.Hour, 0}} {
		if got := r.VUs(tt.t); got != tt.want {
			t.Errorf("VUs(%v) = %d, want %d", tt.t, got, tt.want)
		}
	}
	if r.Max() != 10 || r.Duration() != 25*time.Second {
		t.Errorf("Max %d Duration %v", r.Max(), r.Duration())
	}
}
