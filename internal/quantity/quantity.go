// Package quantity parses and formats the quantities users type: byte sizes
// ("2560MiB", "1.5GB"), percentages ("1%", "99.9%") and rates ("2000/s",
// "7000/10m"). The command line, the plan file and thresholds share it so a
// value means the same thing everywhere.
package quantity

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

var byteUnits = []struct {
	suffix string
	mult   float64
}{
	// Longest suffixes first so "MiB" is not read as "B".
	{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"TiB", 1 << 40},
	{"kB", 1e3}, {"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"TB", 1e12},
	{"K", 1 << 10}, {"M", 1 << 20}, {"G", 1 << 30}, {"B", 1},
}

// ParseBytes reads a byte size: a number with an optional unit (B, kB, MB,
// GB, TB as powers of 1000; KiB, MiB, GiB, TiB and K, M, G as powers of 1024).
func ParseBytes(s string) (int64, error) {
	t := strings.TrimSpace(s)
	mult := 1.0
	for _, u := range byteUnits {
		if strings.HasSuffix(t, u.suffix) {
			t, mult = strings.TrimSpace(strings.TrimSuffix(t, u.suffix)), u.mult
			break
		}
	}
	v, err := strconv.ParseFloat(t, 64)
	if err != nil || v < 0 || math.IsInf(v, 0) || math.IsNaN(v) {
		return 0, fmt.Errorf("bad size %q: want a number with an optional unit such as 512KiB or 2GB", s)
	}
	b := v * mult
	if b > math.MaxInt64/2 {
		return 0, fmt.Errorf("size %q is too large", s)
	}
	return int64(math.Round(b)), nil
}

// FormatBytes writes n with a binary unit, three significant digits (four
// between 1000 and 1023 of a unit, never an exponent).
func FormatBytes(n int64) string {
	v := float64(n)
	for _, u := range []string{"B", "KiB", "MiB", "GiB", "TiB"} {
		if math.Abs(v) < 1024 || u == "TiB" {
			decimals := 2
			switch {
			case u == "B":
				return fmt.Sprintf("%d B", n)
			case math.Abs(v) >= 100:
				decimals = 0
			case math.Abs(v) >= 10:
				decimals = 1
			}
			t := strconv.FormatFloat(v, 'f', decimals, 64)
			if strings.Contains(t, ".") {
				t = strings.TrimRight(strings.TrimRight(t, "0"), ".")
			}
			return t + " " + u
		}
		v /= 1024
	}
	return ""
}

// ParsePercent reads "1%" or "99.9%" as a fraction (0.01, 0.999).
func ParsePercent(s string) (float64, error) {
	t := strings.TrimSpace(s)
	if !strings.HasSuffix(t, "%") {
		return 0, fmt.Errorf("bad percentage %q: want a number followed by %%", s)
	}
	v, err := strconv.ParseFloat(strings.TrimSpace(strings.TrimSuffix(t, "%")), 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, fmt.Errorf("bad percentage %q", s)
	}
	return v / 100, nil
}

// Rate is a count per period; 7000 per 10 minutes is {7000, 10m}.
type Rate struct {
	Count float64
	Per   time.Duration
}

// PerSecond is the rate per second.
func (r Rate) PerSecond() float64 { return r.Count / r.Per.Seconds() }

func (r Rate) String() string {
	unit := map[time.Duration]string{time.Second: "s", time.Minute: "m", time.Hour: "h"}[r.Per]
	if unit == "" {
		unit = strings.TrimSuffix(strings.TrimSuffix(r.Per.String(), "0s"), "m0")
	}
	return strconv.FormatFloat(r.Count, 'f', -1, 64) + "/" + unit
}

// ErrRate describes the rate syntax.
var ErrRate = errors.New(`want a count per period such as 2000/s, 30/m, 7000/10m or 1.5/h`)

// ParseRate reads "2000/s", "30/m", "7000/10m", "1.5/h" or a plain number
// per second. The count must be positive.
func ParseRate(s string) (Rate, error) {
	t := strings.TrimSpace(s)
	count, per, found := strings.Cut(t, "/")
	n, err := strconv.ParseFloat(strings.TrimSpace(count), 64)
	if err != nil || math.IsNaN(n) || math.IsInf(n, 0) {
		return Rate{}, fmt.Errorf("bad rate %q: %w", s, ErrRate)
	}
	if n <= 0 {
		return Rate{}, fmt.Errorf("bad rate %q: the count must be positive", s)
	}
	if !found {
		return Rate{n, time.Second}, nil
	}
	per = strings.TrimSpace(per)
	d, err := parsePeriod(per)
	if err != nil {
		return Rate{}, fmt.Errorf("bad rate %q: %w", s, ErrRate)
	}
	return Rate{n, d}, nil
}

// ParseRateAllowZero is ParseRate that also accepts a zero count, as the
// start of a ramp ("0/s").
func ParseRateAllowZero(s string) (Rate, error) {
	t := strings.TrimSpace(s)
	count, per, found := strings.Cut(t, "/")
	if n, err := strconv.ParseFloat(strings.TrimSpace(count), 64); err == nil && n == 0 {
		d := time.Second
		if found {
			if d, err = parsePeriod(strings.TrimSpace(per)); err != nil {
				return Rate{}, fmt.Errorf("bad rate %q: %w", s, ErrRate)
			}
		}
		return Rate{0, d}, nil
	}
	return ParseRate(s)
}

func parsePeriod(per string) (time.Duration, error) {
	switch per {
	case "s", "sec", "second":
		return time.Second, nil
	case "m", "min", "minute":
		return time.Minute, nil
	case "h", "hour":
		return time.Hour, nil
	}
	if per == "" {
		return 0, ErrRate
	}
	// "10m", "30s": a Go duration; a bare number of a unit needs the unit.
	d, err := time.ParseDuration(per)
	if err != nil || d <= 0 {
		return 0, ErrRate
	}
	return d, nil
}

// PerSecondOrZero is the rate per second, or zero for a rate without a period.
func (r Rate) PerSecondOrZero() float64 {
	if r.Per <= 0 {
		return 0
	}
	return r.PerSecond()
}
