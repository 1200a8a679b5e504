package quantity

import (
	"testing"
	"time"
)

func TestParseBytes(t *testing.T) {
	tests := []struct {
		in   string
		want int64
		bad  bool
	}{
		{in: "100", want: 100},
		{in: "2560MiB", want: 2560 << 20},
		{in: "1.5GB", want: 1_500_000_000},
		{in: "16 KiB", want: 16 << 10},
		{in: "64M", want: 64 << 20},
		{in: "10kB", want: 10_000},
		{in: "-1", bad: true},
		{in: "lots", bad: true},
		{in: "5XB", bad: true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseBytes(tt.in)
			if (err != nil) != tt.bad || got != tt.want {
				t.Fatalf("ParseBytes(%q) = %d, %v", tt.in, got, err)
			}
		})
	}
}

func TestParseRate(t *testing.T) {
	tests := []struct {
		in   string
		want Rate
		bad  bool
	}{
		{in: "2000/s", want: Rate{2000, time.Second}},
		{in: "2000", want: Rate{2000, time.Second}},
		{in: "7000/10m", want: Rate{7000, 10 * time.Minute}},
		{in: "30/m", want: Rate{30, time.Minute}},
		{in: "1.5/h", want: Rate{1.5, time.Hour}},
		{in: "0/s", bad: true},
		{in: "-5/s", bad: true},
		{in: "5/fortnight", bad: true},
		{in: "5/", bad: true},
		{in: "fast", bad: true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseRate(tt.in)
			if (err != nil) != tt.bad || got != tt.want {
				t.Fatalf("ParseRate(%q) = %v, %v", tt.in, got, err)
			}
		})
	}
	if r, err := ParseRateAllowZero("0/s"); err != nil || r.Count != 0 {
		t.Errorf("ParseRateAllowZero(0/s) = %v, %v", r, err)
	}
}

func TestParsePercent(t *testing.T) {
	if v, err := ParsePercent("99.9%"); err != nil || v < 0.9989 || v > 0.9991 {
		t.Errorf("99.9%% = %v, %v", v, err)
	}
	if _, err := ParsePercent("5"); err == nil {
		t.Error("5 without % accepted")
	}
}

func TestFormatBytes(t *testing.T) {
	for in, want := range map[int64]string{512: "512 B", 2048: "2 KiB", 2560 << 20: "2.5 GiB", 1020 << 20: "1020 MiB", 15 << 20: "15 MiB", 6092 << 10: "5.95 MiB"} {
		if got := FormatBytes(in); got != want {
			t.Errorf("FormatBytes(%d) = %q, want %q", in, got, want)
		}
	}
}
