package threshold

import (
	"math"
	"math/big"
	"strconv"
	"strings"

	"github.com/loadlab/loadlab/internal/quantity"
)

// formatLimit writes a limit in the unit a person would choose, such that
// parsing it gives back exactly v: 2000 ms is "2s", 0.01 is "1%", 100 per
// second is "100/s" and 7000 per ten minutes "700/m".
func formatLimit(unit Unit, v float64) string {
	switch unit {
	case Milliseconds:
		// The largest unit in which the limit is a whole number, else ms.
		for _, u := range []struct {
			name string
			ms   int64
		}{{"h", 3_600_000}, {"m", 60_000}, {"s", 1000}} {
			if d := shortestDecimal(v, big.NewRat(u.ms, 1)); d != "" && !strings.Contains(d, ".") {
				return d + u.name
			}
		}
		return shortestDecimal(v, big.NewRat(1, 1)) + "ms"
	case Fraction:
		return shortestDecimal(v, big.NewRat(1, 100)) + "%"
	case Bytes:
		return formatBytesExact(v)
	case PerSecond:
		// The shortest period in which the count is whole, else per second.
		for _, u := range []struct {
			name    string
			seconds int64
		}{{"s", 1}, {"m", 60}, {"h", 3600}} {
			if d := shortestDecimal(v, big.NewRat(1, u.seconds)); d != "" && !strings.Contains(d, ".") {
				return d + "/" + u.name
			}
		}
		return shortestDecimal(v, big.NewRat(1, 1)) + "/s"
	}
	return shortestDecimal(v, big.NewRat(1, 1))
}

// formatBytesExact writes a byte count in the largest unit that divides it,
// binary or decimal, as quantity.ParseBytes reads it back.
func formatBytesExact(v float64) string {
	if v < 0 || v >= math.MaxInt64 || v != math.Trunc(v) {
		return shortestDecimal(v, big.NewRat(1, 1)) + "B"
	}
	n := int64(v)
	if n == 0 {
		return "0B"
	}
	for _, u := range []struct {
		name string
		size int64
	}{
		{"TiB", 1 << 40}, {"TB", 1e12}, {"GiB", 1 << 30}, {"GB", 1e9},
		{"MiB", 1 << 20}, {"MB", 1e6}, {"KiB", 1 << 10}, {"kB", 1e3},
	} {
		if n%u.size == 0 {
			return strconv.FormatInt(n/u.size, 10) + u.name
		}
	}
	return strconv.FormatInt(n, 10) + "B"
}

// shortestDecimal is the shortest plain decimal d (no exponent, as the
// grammar has none) such that d×unit, rounded to a float64, is v; so a
// threshold written by String parses back to the same value. It returns ""
// only when unit is not 1 and no decimal of up to 17 digits does; with unit
// 1 one always does.
func shortestDecimal(v float64, unit *big.Rat) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return strconv.FormatFloat(v, 'g', -1, 64)
	}
	exact := new(big.Rat).SetFloat64(v)
	approx, _ := new(big.Rat).Quo(exact, unit).Float64()
	for digits := range 17 {
		d, ok := new(big.Rat).SetString(strconv.FormatFloat(approx, 'e', digits, 64))
		if !ok {
			continue
		}
		if f, _ := new(big.Rat).Mul(d, unit).Float64(); f == v {
			return plainDecimal(d)
		}
	}
	if unit.Cmp(big.NewRat(1, 1)) == 0 {
		return plainDecimal(exact) // unreachable: 17 digits round-trip any float64
	}
	return ""
}

// plainDecimal writes a rational with a finite decimal expansion in full.
func plainDecimal(d *big.Rat) string {
	scaled := new(big.Rat).Set(d)
	ten := big.NewRat(10, 1)
	for places := 0; ; places++ {
		if scaled.IsInt() {
			return d.FloatString(places)
		}
		scaled.Mul(scaled, ten)
	}
}

// formatMeasured writes a measured figure for a person: four significant
// digits and the unit.
func formatMeasured(unit Unit, v float64) string {
	switch unit {
	case Milliseconds:
		return significant(v, 4) + " ms"
	case Fraction:
		return significant(v*100, 4) + "%"
	case Bytes:
		return quantity.FormatBytes(int64(math.Round(v)))
	case PerSecond:
		return significant(v, 4) + "/s"
	}
	return significant(v, 4)
}

// significant rounds v to the given significant digits and writes it
// without an exponent or trailing zeros: 812.031 is "812", 0.05123 "0.05123".
func significant(v float64, digits int) string {
	if v == 0 || math.IsNaN(v) || math.IsInf(v, 0) {
		return strconv.FormatFloat(v, 'g', -1, 64)
	}
	rounded, _ := strconv.ParseFloat(strconv.FormatFloat(v, 'e', digits-1, 64), 64)
	return strconv.FormatFloat(rounded, 'f', -1, 64)
}
