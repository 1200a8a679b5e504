package stats

import (
	"encoding/json"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// benchstatSets are the samples of the benchstat reference run below, in
// the order of its rows. The files were written one line per sample, for
// example "BenchmarkSignificant 1 100 rps" (base values in old.txt, test
// values in new.txt; the custom unit "rps" keeps benchstat from rescaling
// values as it does ns/op).
var benchstatSets = map[string]struct{ base, test []float64 }{
	"Significant":    {[]float64{100, 102, 101, 99, 103}, []float64{112, 114, 113, 111, 115}},
	"NotSignificant": {[]float64{100, 104, 98, 102, 101}, []float64{101, 99, 105, 103, 100}},
	"Ties10":         {[]float64{50, 50, 51, 52, 52, 52, 53, 54, 55, 60}, []float64{52, 53, 53, 54, 54, 55, 55, 56, 57, 58}},
	"Uneven5x10":     {[]float64{200, 210, 205, 208, 202}, []float64{190, 195, 199, 201, 185, 192, 188, 197, 193, 191}},
	"Few3":           {[]float64{10, 11, 12}, []float64{20, 21, 22}},
	"ZeroBase":       {[]float64{0, 0, 0, 0, 0}, []float64{1, 2, 1, 2, 1}},
	"AllEqual":       {[]float64{7, 7, 7, 7, 7}, []float64{7, 7, 7, 7, 7}},
	"Faster":         {[]float64{1000, 1010, 990, 1005, 995, 1002, 998, 1001, 999, 1003}, []float64{900, 905, 895, 910, 890, 902, 898, 901, 899, 903}},
}

// TestCompareMatchesBenchstat checks every figure benchstat printed for the
// samples in benchstatSets. The expected values were obtained with
//
//	GOBIN=/tmp/bin go install golang.org/x/perf/cmd/benchstat@v0.0.0-20260908200009-22c9c6c9d4da
//	/tmp/bin/benchstat old.txt new.txt                                  (defaults: -alpha 0.05 -confidence 0.95)
//	/tmp/bin/benchstat -format csv old.txt new.txt                      (full-precision centers, footnotes per cell)
//	/tmp/bin/benchstat -alpha 0.01 -confidence 0.90 old.txt new.txt     (and its -format csv)
//
// which printed, for the defaults:
//
//	               │    old.txt    │                 new.txt                  │
//	               │      rps      │     rps       vs base                    │
//	Significant       101.0 ±  ∞ ¹   113.0 ±  ∞ ¹  +11.88% (p=0.008 n=5)
//	NotSignificant    101.0 ±  ∞ ¹   101.0 ±  ∞ ¹        ~ (p=0.817 n=5)
//	Ties10            52.00 ± 6%     54.50 ± 5%     +4.81% (p=0.044 n=10)
//	Uneven5x10        205.0 ±  ∞ ¹   192.5 ± 3%     -6.10% (p=0.001 n=5+10)
//	Few3              11.00 ±  ∞ ¹   21.00 ±  ∞ ¹        ~ (p=0.100 n=3)    ²
//	ZeroBase          0.000 ±  ∞ ¹   1.000 ±  ∞ ¹        ? (p=0.008 n=5)
//	AllEqual          7.000 ±  ∞ ¹   7.000 ±  ∞ ¹        ~ (p=1.000 n=5)    ³
//	Faster           1000.5 ± 1%     900.5 ± 1%    -10.00% (p=0.000 n=10)
//	¹ need >= 6 samples for confidence interval at level 0.95
//	² need >= 4 samples to detect a difference at alpha level 0.05
//	³ all samples are equal
//
// and for -alpha 0.01 -confidence 0.90:
//
//	Significant       101.0 ± 2%     113.0 ±   2%    +11.88% (p=0.008 n=5)
//	NotSignificant    101.0 ± 3%     101.0 ±   4%          ~ (p=0.817 n=5)
//	Ties10            52.00 ± 4%     54.50 ±   3%          ~ (p=0.044 n=10)
//	Uneven5x10        205.0 ± 2%     192.5 ±   2%     -6.10% (p=0.001 n=5+10)
//	Few3              11.00 ±  ∞ ¹   21.00 ±    ∞ ¹        ~ (p=0.100 n=3)    ²
//	ZeroBase          0.000 ± 0%     1.000 ± 100%          ? (p=0.008 n=5)
//	AllEqual          7.000 ± 0%     7.000 ±   0%          ~ (p=1.000 n=5)    ³
//	Faster           1000.5 ± 1%     900.5 ±   1%    -10.00% (p=0.000 n=10)
//	¹ need >= 5 samples for confidence interval at level 0.9
//	² need >= 5 samples to detect a difference at alpha level 0.01
//	³ all samples are equal
//
// The CSV output gave the centers exactly (101, 113, 52, 54.5, 205, 192.5,
// 11, 21, 0, 1, 7, 1000.5, 900.5) and placed each footnote on its cell.
// The p column is the p-value rounded to three decimals.
func TestCompareMatchesBenchstat(t *testing.T) {
	const (
		ci95 = "need >= 6 samples for confidence interval at level 0.95"
		ci90 = "need >= 5 samples for confidence interval at level 0.9"
	)
	tests := []struct {
		set               string
		alpha, confidence float64
		baseCenter        float64
		testCenter        float64
		baseCell          string // benchstat's old column, padding removed
		testCell          string // benchstat's new column, padding removed
		vsBase            string // benchstat's "vs base" and p columns
		p                 float64
		significant       bool
		baseWarnings      []string
		testWarnings      []string
		compareWarnings   []string
	}{
		// Defaults: -alpha 0.05 -confidence 0.95.
		{"Significant", 0.05, 0.95, 101, 113, "101.0 ± ∞", "113.0 ± ∞", "+11.88% (p=0.008 n=5)", 0.008, true,
			[]string{ci95}, []string{ci95}, nil},
		{"NotSignificant", 0.05, 0.95, 101, 101, "101.0 ± ∞", "101.0 ± ∞", "~ (p=0.817 n=5)", 0.817, false,
			[]string{ci95}, []string{ci95}, nil},
		{"Ties10", 0.05, 0.95, 52, 54.5, "52.00 ± 6%", "54.50 ± 5%", "+4.81% (p=0.044 n=10)", 0.044, true,
			nil, nil, nil},
		{"Uneven5x10", 0.05, 0.95, 205, 192.5, "205.0 ± ∞", "192.5 ± 3%", "-6.10% (p=0.001 n=5+10)", 0.001, true,
			[]string{ci95}, nil, nil},
		{"Few3", 0.05, 0.95, 11, 21, "11.00 ± ∞", "21.00 ± ∞", "~ (p=0.100 n=3)", 0.100, false,
			[]string{ci95}, []string{ci95}, []string{"need >= 4 samples to detect a difference at alpha level 0.05"}},
		{"ZeroBase", 0.05, 0.95, 0, 1, "0.000 ± ∞", "1.000 ± ∞", "? (p=0.008 n=5)", 0.008, true,
			[]string{ci95}, []string{ci95}, nil},
		{"AllEqual", 0.05, 0.95, 7, 7, "7.000 ± ∞", "7.000 ± ∞", "~ (p=1.000 n=5)", 1, false,
			[]string{ci95}, []string{ci95}, []string{"all samples are equal"}},
		{"Faster", 0.05, 0.95, 1000.5, 900.5, "1000.5 ± 1%", "900.5 ± 1%", "-10.00% (p=0.000 n=10)", 0.000, true,
			nil, nil, nil},

		// -alpha 0.01 -confidence 0.90.
		{"Significant", 0.01, 0.90, 101, 113, "101.0 ± 2%", "113.0 ± 2%", "+11.88% (p=0.008 n=5)", 0.008, true,
			nil, nil, nil},
		{"NotSignificant", 0.01, 0.90, 101, 101, "101.0 ± 3%", "101.0 ± 4%", "~ (p=0.817 n=5)", 0.817, false,
			nil, nil, nil},
		{"Ties10", 0.01, 0.90, 52, 54.5, "52.00 ± 4%", "54.50 ± 3%", "~ (p=0.044 n=10)", 0.044, false,
			nil, nil, nil},
		{"Uneven5x10", 0.01, 0.90, 205, 192.5, "205.0 ± 2%", "192.5 ± 2%", "-6.10% (p=0.001 n=5+10)", 0.001, true,
			nil, nil, nil},
		{"Few3", 0.01, 0.90, 11, 21, "11.00 ± ∞", "21.00 ± ∞", "~ (p=0.100 n=3)", 0.100, false,
			[]string{ci90}, []string{ci90}, []string{"need >= 5 samples to detect a difference at alpha level 0.01"}},
		{"ZeroBase", 0.01, 0.90, 0, 1, "0.000 ± 0%", "1.000 ± 100%", "? (p=0.008 n=5)", 0.008, true,
			nil, nil, nil},
		{"AllEqual", 0.01, 0.90, 7, 7, "7.000 ± 0%", "7.000 ± 0%", "~ (p=1.000 n=5)", 1, false,
			nil, nil, []string{"all samples are equal"}},
		{"Faster", 0.01, 0.90, 1000.5, 900.5, "1000.5 ± 1%", "900.5 ± 1%", "-10.00% (p=0.000 n=10)", 0.000, true,
			nil, nil, nil},
	}
	for _, tt := range tests {
		name := tt.set + "/alpha=" + trimFloat(tt.alpha) + ",confidence=" + trimFloat(tt.confidence)
		t.Run(name, func(t *testing.T) {
			set := benchstatSets[tt.set]
			c := CompareWith(set.base, set.test, tt.alpha, tt.confidence)

			if c.Base.Center != tt.baseCenter || c.Test.Center != tt.testCenter {
				t.Errorf("centers = %v, %v; benchstat: %v, %v", c.Base.Center, c.Test.Center, tt.baseCenter, tt.testCenter)
			}
			if got := FormatCells(c.Base, c.Test); got[0] != tt.baseCell || got[1] != tt.testCell {
				t.Errorf("FormatCells(Base, Test) = %q; benchstat: %q, %q", got, tt.baseCell, tt.testCell)
			}
			if got := c.String(); got != tt.vsBase {
				t.Errorf("String() = %q; benchstat: %q", got, tt.vsBase)
			}
			if math.Abs(c.P-tt.p) > 0.0005 {
				t.Errorf("P = %v; benchstat printed %.3f", c.P, tt.p)
			}
			if c.Significant != tt.significant {
				t.Errorf("Significant = %v, want %v (p=%v alpha=%v)", c.Significant, tt.significant, c.P, c.Alpha)
			}
			if c.Alpha != tt.alpha {
				t.Errorf("Alpha = %v, want %v", c.Alpha, tt.alpha)
			}
			if c.Base.N != len(set.base) || c.Test.N != len(set.test) {
				t.Errorf("N = %d+%d, want %d+%d", c.Base.N, c.Test.N, len(set.base), len(set.test))
			}
			checkWarnings(t, "Base.Warnings", c.Base.Warnings, tt.baseWarnings)
			checkWarnings(t, "Test.Warnings", c.Test.Warnings, tt.testWarnings)
			checkWarnings(t, "Warnings", c.Warnings, tt.compareWarnings)
		})
	}
}

// TestSummarizeInterval pins the interval itself, not only its rendering:
// for 10 samples at 95% the distribution-free interval of the median runs
// from the 2nd to the 9th smallest sample, with actual confidence
// 1 - 2*(1+10)/2^10 (the binomial tail of Bin(10, 1/2)).
func TestSummarizeInterval(t *testing.T) {
	tests := []struct {
		name                   string
		samples                []float64
		confidence             float64
		center, lo, hi, actual float64
	}{
		{"ten samples at 0.95", benchstatSets["Ties10"].base, 0.95, 52, 50, 55, 1 - 22.0/1024},
		{"ten samples unsorted", []float64{60, 55, 54, 53, 52, 52, 52, 51, 50, 50}, 0.95, 52, 50, 55, 1 - 22.0/1024},
		// Five samples at 0.90: the extremes, confidence 1 - 2/2^5.
		{"five samples at 0.90", []float64{102, 100, 101, 99, 103}, 0.90, 101, 99, 103, 1 - 2.0/32},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := Summarize(tt.samples, tt.confidence)
			if !s.Bounded || s.Center != tt.center || s.Lo != tt.lo || s.Hi != tt.hi {
				t.Errorf("Summarize = %+v, want center %v in [%v, %v]", s, tt.center, tt.lo, tt.hi)
			}
			if math.Abs(s.Confidence-tt.actual) > 1e-12 {
				t.Errorf("Confidence = %v, want %v", s.Confidence, tt.actual)
			}
			if len(s.Warnings) != 0 {
				t.Errorf("Warnings = %q, want none", s.Warnings)
			}
		})
	}
}

func TestSummarizeEdgeCases(t *testing.T) {
	nan, inf := math.NaN(), math.Inf(1)
	tests := []struct {
		name           string
		samples        []float64
		confidence     float64
		wantN          int
		center         float64
		bounded        bool
		confidenceUsed float64 // only checked for empty input, where nothing else sets it
		warnings       []string
		str            string
	}{
		{"nil", nil, 0.95, 0, 0, false, 0.95, []string{"no samples"}, "no samples"},
		{"empty", []float64{}, 0.95, 0, 0, false, 0.95, []string{"no samples"}, "no samples"},
		{"all NaN", []float64{nan, nan}, 0.95, 0, 0, false, 0.95,
			[]string{"dropped 2 non-finite samples", "no samples"}, "no samples"},
		{"NaN and Inf dropped", []float64{nan, 3, inf, 1, math.Inf(-1), 2}, 0.95, 3, 2, false, 0,
			[]string{"dropped 3 non-finite samples", "need >= 6 samples for confidence interval at level 0.95"}, "2.000 ± ∞"},
		{"one sample", []float64{42}, 0.95, 1, 42, false, 0,
			[]string{"need >= 6 samples for confidence interval at level 0.95"}, "42.00 ± ∞"},
		{"zero confidence means default", []float64{1, 2, 3, 4, 5, 6}, 0, 6, 3.5, true, 0, nil, "3.500 ± 71%"},
		{"confidence 1.5 replaced", nil, 1.5, 0, 0, false, 0.95,
			[]string{"confidence 1.5 is not in (0, 1); using 0.95", "no samples"}, "no samples"},
		{"confidence NaN replaced", []float64{1, 2, 3, 4, 5, 6}, nan, 6, 3.5, true, 0,
			[]string{"confidence NaN is not in (0, 1); using 0.95"}, "3.500 ± 71%"},
		{"negative confidence replaced", []float64{1, 2, 3, 4, 5, 6}, -0.5, 6, 3.5, true, 0,
			[]string{"confidence -0.5 is not in (0, 1); using 0.95"}, "3.500 ± 71%"},
		{"large values scaled like benchstat", []float64{12345, 12346, 12347, 12348, 12349, 12350}, 0.95, 6, 12347.5, true, 0, nil, "12.35k ± 0%"},
		{"small values scaled like benchstat", []float64{0.0012, 0.0013, 0.0011, 0.0012, 0.0014, 0.0012}, 0.95, 6, 0.0012, true, 0, nil, "1.200m ± 17%"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := slices.Clone(tt.samples)
			s := Summarize(in, tt.confidence)
			if !slices.EqualFunc(in, tt.samples, func(a, b float64) bool { return a == b || (a != a && b != b) }) {
				t.Errorf("Summarize modified its input: %v, was %v", in, tt.samples)
			}
			if s.N != tt.wantN || s.Center != tt.center || s.Bounded != tt.bounded {
				t.Errorf("Summarize = %+v, want N=%d center=%v bounded=%v", s, tt.wantN, tt.center, tt.bounded)
			}
			if tt.confidenceUsed != 0 && s.Confidence != tt.confidenceUsed {
				t.Errorf("Confidence = %v, want %v", s.Confidence, tt.confidenceUsed)
			}
			checkWarnings(t, "Warnings", s.Warnings, tt.warnings)
			if got := s.String(); got != tt.str {
				t.Errorf("String() = %q, want %q", got, tt.str)
			}
			checkFinite(t, s)
		})
	}
}

func TestCompareEdgeCases(t *testing.T) {
	nan := math.NaN()
	five := []float64{10, 11, 12, 13, 14}
	tests := []struct {
		name        string
		base, test  []float64
		alpha       float64
		str         string
		significant bool
		delta       float64
		defined     bool
		warnings    []string
	}{
		{"empty baseline", nil, five, 0.05, "~ (p=1.000 n=0+5)", false, 0, false,
			[]string{"no baseline samples to compare with"}},
		{"empty test", five, []float64{}, 0.05, "~ (p=1.000 n=5+0)", false, 0, false,
			[]string{"no test samples to compare"}},
		{"both empty", nil, nil, 0.05, "~ (p=1.000 n=0)", false, 0, false,
			[]string{"no baseline samples to compare with"}},
		{"NaN samples dropped before the test", []float64{10, nan, 11, 12, 13, 14}, []float64{20, 21, nan, 22, 23, 24}, 0.05,
			"+83.33% (p=0.008 n=5)", true, 22.0/12 - 1, true, nil},
		{"zero alpha means default", five, []float64{20, 21, 22, 23, 24}, 0, "+83.33% (p=0.008 n=5)", true, 22.0/12 - 1, true, nil},
		{"alpha 2 replaced by default", five, []float64{20, 21, 22, 23, 24}, 2, "+83.33% (p=0.008 n=5)", true, 22.0/12 - 1, true,
			[]string{"alpha 2 is not in (0, 1); using 0.05"}},
		{"zero baseline, significant", []float64{0, 0, 0, 0, 0}, []float64{3, 4, 5, 6, 7}, 0.05, "? (p=0.008 n=5)", true, 0, false, nil},
		{"zero baseline and zero test", []float64{0, 0, 0, 0, 0}, []float64{0, 0, 0, 0, 0}, 0.05, "~ (p=1.000 n=5)", false, 0, true,
			[]string{"all samples are equal"}},
		{"equal centers, different spread", []float64{1, 5, 10, 15, 19}, []float64{9, 9.5, 10, 10.5, 11}, 0.05, "~ (p=1.000 n=5)", false, 0, true, nil},
		{"tiny baseline overflows the ratio", []float64{1e-310, 1e-310, 1e-310, 1e-310, 1e-310}, []float64{1e10, 1e10, 1e10, 1e10, 1e10}, 0.05,
			"? (p=0.008 n=5)", true, 0, false, nil},
		{"a regression of latency", []float64{100, 101, 102, 103, 104, 105}, []float64{110, 111, 112, 113, 114, 115}, 0.05,
			"+9.76% (p=0.002 n=6)", true, 112.5/102.5 - 1, true, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := Compare(tt.base, tt.test, tt.alpha)
			if got := c.String(); got != tt.str {
				t.Errorf("String() = %q, want %q", got, tt.str)
			}
			if c.Significant != tt.significant || c.DeltaDefined != tt.defined || math.Abs(c.Delta-tt.delta) > 1e-12 {
				t.Errorf("Significant, DeltaDefined, Delta = %v, %v, %v; want %v, %v, %v",
					c.Significant, c.DeltaDefined, c.Delta, tt.significant, tt.defined, tt.delta)
			}
			checkWarnings(t, "Warnings", c.Warnings, tt.warnings)
			for _, s := range []string{c.String(), c.Base.String(), c.Test.String(), strings.Join(c.AllWarnings(), "\n")} {
				if strings.Contains(s, "NaN") || strings.Contains(s, "Inf") {
					t.Errorf("output leaks a non-finite number: %q", s)
				}
			}
			checkFinite(t, c)
		})
	}
}

func TestAllWarningsNamesTheSide(t *testing.T) {
	c := Compare([]float64{1, 2, 3}, []float64{math.NaN(), 4, 5, 6}, 0.05)
	want := []string{
		"baseline: need >= 6 samples for confidence interval at level 0.95",
		"test: dropped 1 non-finite sample",
		"test: need >= 6 samples for confidence interval at level 0.95",
		"need >= 4 samples to detect a difference at alpha level 0.05",
	}
	checkWarnings(t, "AllWarnings", c.AllWarnings(), want)
}

func checkWarnings(t *testing.T, what string, got, want []string) {
	t.Helper()
	if !slices.Equal(got, want) {
		t.Errorf("%s = %q, want %q", what, got, want)
	}
}

// checkFinite fails when v cannot be stored as JSON, which is what a NaN or
// an infinity anywhere in it would cause.
func checkFinite(t *testing.T, v any) {
	t.Helper()
	if _, err := json.Marshal(v); err != nil {
		t.Errorf("json.Marshal(%+v): %v", v, err)
	}
}

func trimFloat(v float64) string {
	return strconv.FormatFloat(v, 'g', -1, 64)
}

func TestFormatCells(t *testing.T) {
	ten := func(center float64) []float64 {
		return []float64{center - 4, center - 3, center - 2, center - 1, center, center, center + 1, center + 2, center + 3, center + 4}
	}
	tests := []struct {
		name      string
		summaries []Summary
		want      []string
	}{
		// A single value scales alone; in a row the smallest sets the scale.
		{"alone", []Summary{Summarize(ten(1000.5), 0)}, []string{"1.000k ± 0%"}},
		{"row", []Summary{Summarize(ten(1000.5), 0), Summarize(ten(900.5), 0)}, []string{"1000.5 ± 0%", "900.5 ± 0%"}},
		{"row with an empty cell", []Summary{Summarize(ten(20000), 0), {}, Summarize(ten(15000), 0)},
			[]string{"20.00k ± 0%", "no samples", "15.00k ± 0%"}},
		{"all empty", []Summary{{}, {}}, []string{"no samples", "no samples"}},
		{"none", nil, []string{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := FormatCells(tt.summaries...); !slices.Equal(got, tt.want) {
				t.Errorf("FormatCells = %q, want %q", got, tt.want)
			}
		})
	}
}
