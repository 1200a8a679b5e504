package chart

import (
	"math"
	"strconv"

	"gonum.org/v1/plot"
)

// A Unit says how values on an axis are printed. Each unit picks its scale
// from the magnitude (KiB or GiB, µs or s), so labels never read "1e+06".
// The zero value is Number.
type Unit int

const (
	// Number prints plain numbers with SI suffixes: 950, 1.2k, 3.4M.
	Number Unit = iota
	// Bytes prints byte counts in binary multiples: 512 B, 1.5 KiB, 2.5 GiB.
	Bytes
	// Milliseconds prints a duration given in milliseconds: 850 µs, 12.5 ms, 1.2 s.
	Milliseconds
	// Seconds prints a duration given in seconds: 850 ms, 12 s, 20 min.
	Seconds
	// PerSecond prints a rate given per second: 950/s, 12.3k/s.
	PerSecond
)

// A scale is one step of a unit: values of at least from are divided by
// factor and printed with suffix.
type scale struct {
	from, factor float64
	suffix       string
}

// scales lists each unit's steps in ascending order. Durations switch to
// minutes only from 2 minutes on, because "90 s" reads better than "1.5 min".
var scales = [...][]scale{
	Number: {
		{0, 1, ""}, {1e3, 1e3, "k"}, {1e6, 1e6, "M"}, {1e9, 1e9, "G"}, {1e12, 1e12, "T"},
	},
	Bytes: {
		{0, 1, " B"}, {1 << 10, 1 << 10, " KiB"}, {1 << 20, 1 << 20, " MiB"},
		{1 << 30, 1 << 30, " GiB"}, {1 << 40, 1 << 40, " TiB"},
	},
	Milliseconds: {
		{0, 1e-3, " µs"}, {1, 1, " ms"}, {1e3, 1e3, " s"}, {120e3, 60e3, " min"}, {7200e3, 3600e3, " h"},
	},
	Seconds: {
		{0, 1e-6, " µs"}, {1e-3, 1e-3, " ms"}, {1, 1, " s"}, {120, 60, " min"}, {7200, 3600, " h"},
	},
	PerSecond: {
		{0, 1, "/s"}, {1e3, 1e3, "k/s"}, {1e6, 1e6, "M/s"}, {1e9, 1e9, "G/s"},
	},
}

// scale returns the step of u for a value of magnitude abs.
func (u Unit) scale(abs float64) scale {
	steps := scales[Number]
	if u >= 0 && int(u) < len(scales) {
		steps = scales[u]
	}
	s := steps[0]
	if abs == 0 { // zero reads best in the unit the values are given in
		for _, base := range steps {
			if base.factor == 1 {
				return base
			}
		}
	}
	for _, next := range steps[1:] {
		if abs >= next.from {
			s = next
		}
	}
	return s
}

// Format prints v with three significant digits in the scale that suits it:
// Bytes.Format(3<<20) is "3 MiB", Milliseconds.Format(0.25) is "250 µs".
func (u Unit) Format(v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return strconv.FormatFloat(v, 'g', -1, 64)
	}
	s := u.scale(math.Abs(v))
	text := significant(v/s.factor, 3)
	// Rounding may carry into the next scale: 999.7 ms prints as "1 s", not "1000 ms".
	if rounded, err := strconv.ParseFloat(text, 64); err == nil {
		if next := u.scale(math.Abs(rounded) * s.factor); next != s {
			s = next
			text = significant(v/s.factor, 3)
		}
	}
	return text + s.suffix
}

// significant formats x with about digits significant digits, in plain
// notation and without trailing zeros.
func significant(x float64, digits int) string {
	if x == 0 {
		return "0"
	}
	intDigits := int(math.Floor(math.Log10(math.Abs(x)))) + 1
	text := strconv.FormatFloat(x, 'f', max(0, digits-intDigits), 64)
	return trimZeros(text)
}

// trimZeros removes trailing zeros after a decimal point, and the point if
// nothing follows it, and turns "-0" into "0".
func trimZeros(text string) string {
	for i := 0; i < len(text); i++ {
		if text[i] == '.' {
			end := len(text)
			for end > i+1 && text[end-1] == '0' {
				end--
			}
			if end == i+1 {
				end = i
			}
			text = text[:end]
			break
		}
	}
	if text == "-0" {
		return "0"
	}
	return text
}

// tickCount is about how many labelled ticks an axis gets.
const tickCount = 5

// maxSweepTicks is the most swept values that are each given a tick.
const maxSweepTicks = 12

// linearTicks marks a linear axis in one scale of the unit, chosen from the
// larger end of the axis, so that 0 to 2.5 GiB reads 0, 0.5... 2.5 GiB
// rather than round numbers of bytes. Ticks fall on the swept values when
// they are few and evenly spaced (threads 1, 2... 10), otherwise on round
// numbers.
type linearTicks struct {
	unit Unit
	at   []float64 // distinct X values, ascending; nil for round numbers
	// magnitude, when above 0, picks the scale instead of the axis's ends:
	// the data's, so that an axis padded from 912/s to 1000/s reads
	// 200/s... 1000/s, not 0.2k/s... 1k/s.
	magnitude float64
}

func (t linearTicks) Ticks(min, max float64) []plot.Tick {
	m := math.Max(math.Abs(min), math.Abs(max))
	if t.magnitude > 0 {
		m = t.magnitude
	}
	s := t.unit.scale(m)
	var values []float64
	if evenlySpaced(t.at) {
		for _, v := range t.at {
			values = append(values, v/s.factor)
		}
	} else {
		values = roundTicks(min/s.factor, max/s.factor, tickCount)
	}
	decimals := decimalsFor(values)
	ticks := make([]plot.Tick, len(values))
	for i, v := range values {
		label := strconv.FormatFloat(v, 'f', decimals, 64) + s.suffix
		if math.Abs(v) < math.Pow10(-decimals)/2 {
			label = t.unit.Format(0) // "0 B", not "-0.0 GiB"
		}
		ticks[i] = plot.Tick{Value: v * s.factor, Label: label}
	}
	return ticks
}

// evenlySpaced reports whether xs are 2 to maxSweepTicks values at equal
// steps.
func evenlySpaced(xs []float64) bool {
	if len(xs) < 2 || len(xs) > maxSweepTicks {
		return false
	}
	step := xs[1] - xs[0]
	for i := 2; i < len(xs); i++ {
		if math.Abs(xs[i]-xs[i-1]-step) > 1e-9*math.Abs(step) {
			return false
		}
	}
	return true
}

// roundTicks returns about n round values spanning [min, max], at a step of
// 1, 2, 2.5 or 5 times a power of ten.
func roundTicks(min, max float64, n int) []float64 {
	raw := (max - min) / float64(n)
	if !(raw > 0) || math.IsInf(raw, 0) {
		return []float64{min, max}
	}
	magnitude := math.Pow10(int(math.Floor(math.Log10(raw))))
	// Round the raw step to the nearest nice one, so the count stays near n.
	step := 10 * magnitude
	for _, nice := range []struct{ below, m float64 }{{1.5, 1}, {2.25, 2}, {3.5, 2.5}, {7.5, 5}} {
		if raw/magnitude < nice.below {
			step = nice.m * magnitude
			break
		}
	}
	first := math.Ceil(min/step - 1e-9)
	var values []float64
	// The bound guards against steps below the precision of min.
	for i := 0.0; i <= 4*float64(n); i++ {
		v := (first + i) * step
		if v > max+step*1e-9 {
			break
		}
		values = append(values, v)
	}
	return values
}

// decimalsFor returns the number of decimals that prints every value
// exactly, so neighbouring labels differ and line up.
func decimalsFor(values []float64) int {
	decimals := 0
	for _, v := range values {
		for d := decimals; d <= 6; d++ {
			scaled := v * math.Pow10(d)
			if math.Abs(scaled-math.Round(scaled)) < 1e-6*math.Max(1, math.Abs(scaled)) {
				decimals = max(decimals, d)
				break
			}
		}
	}
	return decimals
}

// logTicks marks a logarithmic axis. A sweep such as 1, 2, 4... 64 gets a
// tick at each swept value; otherwise ticks fall on powers of ten.
type logTicks struct {
	unit Unit
	at   []float64 // distinct X values, ascending
}

func (t logTicks) Ticks(min, max float64) []plot.Tick {
	var ticks []plot.Tick
	if geometric(t.at) {
		for _, v := range t.at {
			ticks = append(ticks, plot.Tick{Value: v, Label: t.unit.Format(v)})
		}
		return ticks
	}
	ticks = plot.LogTicks{Prec: -1}.Ticks(min, max)
	for i := range ticks {
		if ticks[i].Label != "" {
			ticks[i].Label = t.unit.Format(ticks[i].Value)
		}
	}
	return ticks
}

// geometric reports whether xs are 2 to maxSweepTicks positive values far
// enough apart on a logarithmic axis for their labels not to collide.
func geometric(xs []float64) bool {
	if len(xs) < 2 || len(xs) > maxSweepTicks || xs[0] <= 0 {
		return false
	}
	for i := 1; i < len(xs); i++ {
		if xs[i]/xs[i-1] < 1.5 {
			return false
		}
	}
	return true
}
