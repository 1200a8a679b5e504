package cost

import (
	"math"
	"strings"
	"testing"
)

// The table: a 1x box holds 150 req/s for $0.05/h, a 2x box
// 340 req/s for $0.10/h.
var table = []Box{{"1x", 0.05, 150}, {"2x", 0.10, 340}}

func TestPerMillion(t *testing.T) {
	for _, tt := range []struct {
		price, rps, want float64
	}{
		{0.05, 150, 0.05 / (150 * 3600) * 1e6}, // $0.0926 a million
		{0.10, 340, 0.0816993464},
		{3.60, 1000, 1},
		{1, 0, math.Inf(1)},
	} {
		if got := PerMillion(tt.price, tt.rps); math.Abs(got-tt.want) > 1e-9 && !(math.IsInf(got, 1) && math.IsInf(tt.want, 1)) {
			t.Errorf("PerMillion(%v, %v) = %v, want %v", tt.price, tt.rps, got, tt.want)
		}
	}
	if got := Money(PerMillion(0.05, 150)); got != "$0.0926" {
		t.Errorf("Money = %s", got)
	}
	for v, want := range map[float64]string{0.0042: "$0.0042", 0.1: "$0.10", 0.125: "$0.125", 0.05: "$0.05", 12.5: "$12.50", 0: "$0.00", 0.000012345: "$0.0000123"} {
		if got := Money(v); got != want {
			t.Errorf("Money(%v) = %s, want %s", v, got, want)
		}
	}
}

func TestServe(t *testing.T) {
	for _, tt := range []struct {
		rate float64
		box  Box
		n    int
	}{
		{1, table[0], 1}, {150, table[0], 1}, {150.5, table[0], 2}, {450, table[0], 3}, {0, table[0], 1},
		{340, table[1], 1}, {341, table[1], 2}, {3 * 0.1 / 0.1 * 340, table[1], 3},
	} {
		o, ok := Serve(tt.box, tt.rate)
		if !ok || o.N != tt.n || math.Abs(o.PerHour-float64(tt.n)*tt.box.PricePerHour) > 1e-12 || o.Holds != float64(tt.n)*tt.box.Capacity {
			t.Errorf("Serve(%s, %v) = %+v, want %d boxes", tt.box.Name, tt.rate, o, tt.n)
		}
	}
	if _, ok := Serve(Box{"none", 1, 0}, 10); ok {
		t.Error("a box that holds nothing serves")
	}
}

func TestCheapest(t *testing.T) {
	for _, tt := range []struct {
		rate float64
		want []string
	}{
		{100, []string{"1 × 1x at $0.05/h", "1 × 2x at $0.10/h"}},
		{200, []string{"1 × 2x at $0.10/h", "2 × 1x at $0.10/h"}}, // the same price: fewer boxes first
		{320, []string{"1 × 2x at $0.10/h", "3 × 1x at $0.15/h"}},
		{400, []string{"3 × 1x at $0.15/h", "2 × 2x at $0.20/h"}},
		{500, []string{"2 × 2x at $0.20/h", "4 × 1x at $0.20/h"}},
	} {
		var got []string
		for _, o := range Cheapest(table, tt.rate) {
			got = append(got, o.String())
		}
		if strings.Join(got, "; ") != strings.Join(tt.want, "; ") {
			t.Errorf("Cheapest(%v) = %q, want %q", tt.rate, got, tt.want)
		}
	}
}

func TestBandsAndCrossovers(t *testing.T) {
	bands, cut := Bands(table, 700)
	if cut {
		t.Error("cut")
	}
	want := []struct {
		from, to float64
		best     string
	}{
		{0, 150, "1 × 1x at $0.05/h"},
		{150, 300, "1 × 2x at $0.10/h"}, // as cheap as 2 × 1x
		{300, 340, "1 × 2x at $0.10/h"}, // 3 × 1x would be $0.15
		{340, 450, "3 × 1x at $0.15/h"},
		{450, 600, "2 × 2x at $0.20/h"}, // as cheap as 4 × 1x
		{600, 680, "2 × 2x at $0.20/h"}, // 5 × 1x would be $0.25
		{680, 700, "5 × 1x at $0.25/h"},
	}
	if len(bands) != len(want) {
		t.Fatalf("bands %+v", bands)
	}
	for i, w := range want {
		if b := bands[i]; math.Abs(b.From-w.from) > 1e-9 || math.Abs(b.To-w.to) > 1e-9 || b.Cheapest.String() != w.best {
			t.Errorf("band %d: (%v, %v] %s, want (%v, %v] %s", i, b.From, b.To, b.Cheapest, w.from, w.to, w.best)
		}
	}
	var got []string
	for _, c := range Crossovers(table, bands) {
		got = append(got, c.String())
	}
	wantText := []string{
		"above 150 req/s, 1 × 2x at $0.10/h costs as much as 2 × 1x, with fewer boxes",
		"3 × 1x at $0.15/h beat 1 × 2x at $0.10/h only above 340 req/s, where 1 × 2x no longer holds the rate (2 × 2x would cost $0.20/h)",
		"above 450 req/s, 2 × 2x at $0.20/h costs as much as 4 × 1x, with fewer boxes",
		"5 × 1x at $0.25/h beat 2 × 2x at $0.20/h only above 680 req/s, where 2 × 2x no longer holds the rate (3 × 2x would cost $0.30/h)",
	}
	if strings.Join(got, "\n") != strings.Join(wantText, "\n") {
		t.Errorf("crossovers:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(wantText, "\n"))
	}
	// A kind that becomes cheapest while the other's price stays: 2 × 1x
	// at $0.10/h above 340 req/s, when one 1x holds 200.
	bands, _ = Bands([]Box{{"1x", 0.05, 200}, {"2x", 0.10, 340}}, 390)
	cs := Crossovers([]Box{{"1x", 0.05, 200}, {"2x", 0.10, 340}}, bands)
	if len(cs) != 2 || cs[0].String() != "above 200 req/s, 1 × 2x at $0.10/h costs as much as 2 × 1x, with fewer boxes" ||
		cs[1].String() != "above 340 req/s, 2 × 1x at $0.10/h beat 2 × 2x at $0.20/h" {
		t.Errorf("crossovers %v", cs)
	}
	// Too many cuts: the bands stop short of the rate and say so.
	bands, cut = Bands([]Box{{"tiny", 0.01, 1}}, 1e6)
	if !cut || len(bands) != MaxBands || bands[len(bands)-1].To != MaxBands {
		t.Errorf("tiny boxes: cut %v, %d bands to %v", cut, len(bands), bands[len(bands)-1].To)
	}
}
