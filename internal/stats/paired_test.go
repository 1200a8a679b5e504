package stats

import (
	"encoding/json"
	"math"
	"os"
	"testing"
)

// TestPairedEqualsScipy: the paired p-values equal scipy.stats.wilcoxon's
// and binomtest's on the cases of testdata/paired-cases.json, exact and
// normal, with ties and zeros; testdata/paired.py wrote the expected values
// with Debian's scipy (it need not run here). The Hodges–Lehmann interval is
// checked against the same script's numpy arithmetic.
func TestPairedEqualsScipy(t *testing.T) {
	t.Parallel()
	var cases []struct {
		Name       string
		Base, Test []float64
	}
	var golden struct {
		Scipy string
		Cases []struct {
			Name              string
			WilcoxonMethod    string  `json:"wilcoxon_method"`
			WilcoxonStatistic float64 `json:"wilcoxon_statistic"`
			WilcoxonP         float64 `json:"wilcoxon_p"`
			SignP             float64 `json:"sign_p"`
			HLRatio           float64 `json:"hl_ratio"`
			HLLo              float64 `json:"hl_lo"`
			HLHi              float64 `json:"hl_hi"`
			HLBounded         bool    `json:"hl_bounded"`
		}
	}
	for file, into := range map[string]any{"testdata/paired-cases.json": &cases, "testdata/paired-scipy.json": &golden} {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(data, into); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
	}
	if len(cases) != len(golden.Cases) || len(cases) == 0 {
		t.Fatalf("%d cases, %d expected answers", len(cases), len(golden.Cases))
	}
	close := func(got, want float64) bool { return math.Abs(got-want) <= 1e-9*math.Max(1, math.Abs(want)) }
	for i, c := range cases {
		g := golden.Cases[i]
		t.Run(c.Name, func(t *testing.T) {
			d, ok := LogRatios(c.Base, c.Test)
			if !ok {
				t.Fatal("not positive")
			}
			w := WilcoxonSignedRank(d)
			if method := map[bool]string{true: "exact", false: "approx"}[w.Exact]; method != g.WilcoxonMethod {
				t.Errorf("method %s, scipy %s", method, g.WilcoxonMethod)
			}
			if !close(w.Statistic, g.WilcoxonStatistic) || !close(w.P, g.WilcoxonP) {
				t.Errorf("wilcoxon statistic %v p %v, scipy %v p %v", w.Statistic, w.P, g.WilcoxonStatistic, g.WilcoxonP)
			}
			if _, _, p := SignTest(d); !close(p, g.SignP) {
				t.Errorf("sign test p %v, scipy %v", p, g.SignP)
			}
			pc := ComparePaired(c.Base, c.Test, 0)
			want := g.WilcoxonP
			if len(c.Base) < SignTestBelow {
				want = g.SignP
			}
			if !close(pc.P, want) || !close(pc.Ratio, g.HLRatio) || !close(pc.Lo, g.HLLo) || !close(pc.Hi, g.HLHi) || pc.Bounded != g.HLBounded {
				t.Errorf("paired %+v, want p %v ratio %v [%v, %v] bounded %v", pc, want, g.HLRatio, g.HLLo, g.HLHi, g.HLBounded)
			}
		})
	}
}

// TestPairedSmallN: below 6 pairs the sign test, and no p-value at or below
// 0.05 (2/2^5 = 0.0625); at 6 pairs all one way, 0.031.
func TestPairedSmallN(t *testing.T) {
	t.Parallel()
	if n := PairsToTest(0.05); n != 6 {
		t.Errorf("pairs to test %d, want 6", n)
	}
	five := ComparePaired([]float64{1, 1, 1, 1, 1}, []float64{2, 2, 2, 2, 2}, 0)
	if five.Method != MethodSign || five.P != 0.0625 || five.Testable || five.Bounded {
		t.Errorf("five pairs %+v", five)
	}
	six := ComparePaired([]float64{1, 1, 1, 1, 1, 1}, []float64{2, 2.1, 2.2, 2.3, 2.4, 2.5}, 0)
	if six.Method != MethodWilcoxon || six.P != 0.03125 || !six.Testable || !six.Bounded || !(six.Lo > 1) {
		t.Errorf("six pairs %+v", six)
	}
	if p := ComparePaired([]float64{1, 0}, []float64{1, 1}, 0); p.Positive || p.P != 1 {
		t.Errorf("a zero figure: %+v", p)
	}
}

// TestDetectableChange: 1% spread at 6 pairs, α 0.05, 80% power: (1.960 +
// 0.842)·√2·1%/√6 = 1.62%.
func TestDetectableChange(t *testing.T) {
	t.Parallel()
	if got := DetectableChange(0.01, 6, 0); math.Abs(got-0.01631) > 0.0001 {
		t.Errorf("detectable %v, want 0.0163", got)
	}
	if s := RelativeSpread([]float64{100, 101, 99, 100, 150}); math.Abs(s-1.4826*math.Log(1.01)) > 1e-3 {
		t.Errorf("spread %v: one stolen run should not set it", s)
	}
}
