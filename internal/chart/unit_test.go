package chart

import (
	"math"
	"slices"
	"strings"
	"testing"
)

func TestUnitFormat(t *testing.T) {
	tests := []struct {
		unit Unit
		v    float64
		want string
	}{
		{Number, 0, "0"},
		{Number, 950, "950"},
		{Number, 1234, "1.23k"},
		{Number, 999.96, "1k"},
		{Number, 1e6, "1M"},
		{Number, -2500, "-2.5k"},
		{Number, 0.25, "0.25"},
		{Number, 0.0001234, "0.000123"},
		{Number, math.NaN(), "NaN"},
		{Number, math.Inf(1), "+Inf"},
		{Bytes, 0, "0 B"},
		{Bytes, 512, "512 B"},
		{Bytes, 1536, "1.5 KiB"},
		{Bytes, 1023.9, "1 KiB"},
		{Bytes, 3 << 20, "3 MiB"},
		{Bytes, 2560 << 20, "2.5 GiB"},
		{Bytes, 5 << 40, "5 TiB"},
		{Milliseconds, 0, "0 ms"},
		{Milliseconds, 0.25, "250 µs"},
		{Milliseconds, 12.5, "12.5 ms"},
		{Milliseconds, 999.7, "1 s"},
		{Milliseconds, 1200, "1.2 s"},
		{Milliseconds, 90e3, "90 s"},
		{Milliseconds, 600e3, "10 min"},
		{Seconds, 0, "0 s"},
		{Seconds, 0.0005, "500 µs"},
		{Seconds, 0.85, "850 ms"},
		{Seconds, 12, "12 s"},
		{Seconds, 3600, "60 min"},
		{Seconds, 7200, "2 h"},
		{PerSecond, 950, "950/s"},
		{PerSecond, 12345, "12.3k/s"},
		{PerSecond, 2.5e6, "2.5M/s"},
		{Unit(42), 1500, "1.5k"}, // unknown units print as Number
	}
	for _, tt := range tests {
		if got := tt.unit.Format(tt.v); got != tt.want {
			t.Errorf("Unit(%d).Format(%v) = %q, want %q", tt.unit, tt.v, got, tt.want)
		}
	}
}

func TestLinearTicks(t *testing.T) {
	tests := []struct {
		name     string
		unit     Unit
		min, max float64
		at       []float64
		want     []string // labels that must appear
	}{
		{"bytes to 2.7 GiB", Bytes, 0, 2.7 * (1 << 30), nil, []string{"0 B", "0.5 GiB", "2.5 GiB"}},
		{"a million", Number, 0, 1.2e6, nil, []string{"0", "0.25M", "1.00M"}},
		{"just over a second", Milliseconds, 0, 1100, nil, []string{"0 ms", "0.2 s", "1.0 s"}},
		{"below a second", Milliseconds, 0, 950, nil, []string{"0 ms", "200 ms", "800 ms"}},
		{"narrow rate", PerSecond, 100100, 100300, nil, []string{"100.10k/s", "100.30k/s"}},
		{"negative", Number, -40, 40, nil, []string{"-40", "0", "40"}},
		{"swept threads", Number, 1, 10, []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, []string{"1", "2", "9", "10"}},
		{"swept concurrency", Number, 50, 200, []float64{50, 100, 150, 200}, []string{"50", "100", "150", "200"}},
		{"uneven sweep", Number, 1, 50, []float64{1, 2, 3, 50}, []string{"10", "50"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ticks := linearTicks{unit: tt.unit, at: tt.at}.Ticks(tt.min, tt.max)
			var labels []string
			for i, tick := range ticks {
				labels = append(labels, tick.Label)
				if i > 0 && tick.Value <= ticks[i-1].Value {
					t.Errorf("ticks out of order: %v", ticks)
				}
				if strings.Contains(tick.Label, "e+") || strings.Contains(tick.Label, "e-") {
					t.Errorf("label %q in exponent notation", tick.Label)
				}
			}
			if n := len(labels); n < 3 || n > maxSweepTicks {
				t.Errorf("%d ticks %q, want 3 to %d", n, labels, maxSweepTicks)
			}
			if len(slices.Compact(slices.Clone(labels))) != len(labels) {
				t.Errorf("repeated labels %q", labels)
			}
			for _, want := range tt.want {
				if !slices.Contains(labels, want) {
					t.Errorf("no label %q in %q", want, labels)
				}
			}
		})
	}
}

func TestLogTicks(t *testing.T) {
	tests := []struct {
		name     string
		min, max float64
		at       []float64
		want     []string
	}{
		{"doubling sweep", 1, 64, []float64{1, 2, 4, 8, 16, 32, 64}, []string{"1", "2", "4", "8", "16", "32", "64"}},
		{"dense sweep", 1, 10, []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, []string{"1", "10"}},
		{"wide range", 1, 1e6, nil, []string{"1", "1k", "1M"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var labels []string
			for _, tick := range (logTicks{unit: Number, at: tt.at}).Ticks(tt.min, tt.max) {
				if tick.Label != "" {
					labels = append(labels, tick.Label)
				}
			}
			for _, want := range tt.want {
				if !slices.Contains(labels, want) {
					t.Errorf("no label %q in %q", want, labels)
				}
			}
			if tt.name == "dense sweep" && slices.Contains(labels, "9") {
				t.Errorf("dense sweep labelled at each value: %q", labels)
			}
		})
	}
}

func TestRoundTicksBounded(t *testing.T) {
	tests := []struct{ min, max float64 }{
		{0, 1}, {1e-300, 3e-300}, {-1e308, 1e308}, {1e15, 1e15 + 1}, {1e17, 1e17 + 1},
	}
	for _, tt := range tests {
		got := roundTicks(tt.min, tt.max, tickCount)
		if len(got) == 0 || len(got) > 4*tickCount+1 {
			t.Errorf("roundTicks(%g, %g) = %d ticks", tt.min, tt.max, len(got))
		}
	}
}
