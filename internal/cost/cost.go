// Package cost turns what a box costs and what it holds into cost per
// request and the cheapest way to serve a rate. It is arithmetic on figures
// it is given, and owns none: each box's capacity (the highest rate one box
// holds under the SLO, or, without a capacity search, the throughput it
// served) comes from the experiment's verdict.
//
// The formulas, with a box's price P per hour and capacity C requests per
// second:
//
//	cost per million requests = P / (C × 3600) × 1e6
//	boxes to serve a rate R    n = ⌈R / C⌉ (at least 1)
//	their cost per hour          n × P
//
// Serving R with n boxes assumes that capacity scales out linearly across
// boxes and that something spreads the load evenly over them: the load
// balancer, its cost and its limits are not included.
package cost

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
)

// Box is one kind of box: its name ("1x"), its price per hour, and
// Capacity, the requests per second one box holds.
type Box struct {
	Name         string
	PricePerHour float64
	Capacity     float64
}

// PerMillion is the cost of a million requests on a box of that price
// serving rps requests per second: price / (rps × 3600) × 1e6. It is
// +Inf when the box serves nothing.
func PerMillion(pricePerHour, rps float64) float64 {
	if !(rps > 0) {
		return math.Inf(1)
	}
	return pricePerHour / (rps * 3600) * 1e6
}

// Option is a way to serve a rate: N boxes of one kind, what they cost an
// hour and the rate they hold together.
type Option struct {
	Box     string  `json:"box"`
	N       int     `json:"n"`
	PerHour float64 `json:"per_hour"`
	Holds   float64 `json:"holds_rps"`
}

// String says an option: "3 × 1x at $0.15/h".
func (o Option) String() string {
	return fmt.Sprintf("%d × %s at %s/h", o.N, o.Box, Money(o.PerHour))
}

// Serve is how many boxes of b serve rate: ⌈rate / capacity⌉, at least
// one; ok is false when b holds nothing (capacity 0).
func Serve(b Box, rate float64) (Option, bool) {
	if !(b.Capacity > 0) {
		return Option{Box: b.Name}, false
	}
	// A rate a whisker over a multiple of the capacity, from floating
	// point (3 × 170 / 170), needs no extra box.
	n := int(math.Ceil(rate/b.Capacity - 1e-9))
	if n < 1 {
		n = 1
	}
	return Option{Box: b.Name, N: n, PerHour: float64(n) * b.PricePerHour, Holds: float64(n) * b.Capacity}, true
}

// Cheapest lists how each kind of box serves rate, cheapest first; of
// options that cost the same, fewer boxes first, then by name. Boxes that
// hold nothing are left out.
func Cheapest(boxes []Box, rate float64) []Option {
	var out []Option
	for _, b := range boxes {
		if o, ok := Serve(b, rate); ok {
			out = append(out, o)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return better(out[i], out[j]) })
	return out
}

// better orders options: cheaper, then fewer boxes, then by name. Prices
// that differ by less than a millionth of themselves are the same.
func better(a, b Option) bool {
	if !Tied(a, b) {
		return a.PerHour < b.PerHour
	}
	if a.N != b.N {
		return a.N < b.N
	}
	return a.Box < b.Box
}

// Band is a range of rates, above From up to To requests per second,
// over which one option is the cheapest; Next is the cheapest of the other
// kinds of box over it (absent with one kind).
type Band struct {
	From     float64 `json:"from_rps"`
	To       float64 `json:"to_rps"`
	Cheapest Option  `json:"cheapest"`
	Next     *Option `json:"next,omitempty"`
}

// MaxBands bounds Bands: past it, the range is cut short (Bands says so).
const MaxBands = 1000

// Bands splits the rates from 0 up to upTo into bands with one cheapest
// option each. The cost of serving a rate with one kind of box only
// changes at multiples of its capacity, so the bands are cut there; next
// bands with the same cheapest option are joined. cut is true when upTo
// needed more than MaxBands cuts and the bands stop short of it.
func Bands(boxes []Box, upTo float64) (bands []Band, cut bool) {
	var cuts []float64
	for _, b := range boxes {
		if !(b.Capacity > 0) {
			continue
		}
		for k := 1; float64(k)*b.Capacity < upTo*(1-1e-9); k++ {
			cuts = append(cuts, float64(k)*b.Capacity)
			if len(cuts) > 4*MaxBands {
				break
			}
		}
	}
	cuts = append(cuts, upTo)
	sort.Float64s(cuts)
	if len(cuts) > MaxBands {
		cuts, cut = cuts[:MaxBands], true
	}
	from := 0.0
	for _, to := range cuts {
		if to-from <= 1e-9*to {
			continue // the same cut twice: two capacities share a multiple
		}
		opts := Cheapest(boxes, (from+to)/2)
		if len(opts) == 0 {
			return nil, false
		}
		band := Band{From: from, To: to, Cheapest: opts[0]}
		if len(opts) > 1 {
			band.Next = &opts[1]
		}
		if n := len(bands); n > 0 && bands[n-1].Cheapest == band.Cheapest && sameOption(bands[n-1].Next, band.Next) {
			bands[n-1].To = to
		} else {
			bands = append(bands, band)
		}
		from = to
	}
	return bands, cut
}

func sameOption(a, b *Option) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

// Crossover is a rate at which the cheapest kind of box changes: up to At,
// Below is the cheapest option; just above it, Above is, and BelowNext is
// what Below's kind would then take.
type Crossover struct {
	At        float64 `json:"at_rps"`
	Below     Option  `json:"below"`
	Above     Option  `json:"above"`
	BelowNext Option  `json:"below_next"`
}

// Crossovers are the rates, in bands, where the cheapest kind of box
// changes (not where the same kind needs one more box).
func Crossovers(boxes []Box, bands []Band) []Crossover {
	var out []Crossover
	for i := 1; i < len(bands); i++ {
		below, above := bands[i-1].Cheapest, bands[i].Cheapest
		if below.Box == above.Box {
			continue
		}
		c := Crossover{At: bands[i].From, Below: below, Above: above}
		for _, b := range boxes {
			if b.Name == below.Box {
				c.BelowNext, _ = Serve(b, (bands[i].From+bands[i].To)/2)
			}
		}
		out = append(out, c)
	}
	return out
}

// String says a crossover: "3 × 1x at $0.15/h beat 1 × 2x at $0.10/h only
// above 340 req/s, where 1 × 2x no longer holds the rate (2 × 2x would
// cost $0.20/h)". When the other kind costs the same as before, "above
// 340 req/s, 2 × 1x at $0.10/h beat 2 × 2x at $0.20/h"; when the two cost
// the same, the one with fewer boxes is named: "above 150 req/s, 1 × 2x
// at $0.10/h costs as much as 2 × 1x, with fewer boxes".
func (c Crossover) String() string {
	switch {
	case Tied(c.Above, c.BelowNext):
		how := "with fewer boxes"
		if c.Above.N == c.BelowNext.N {
			how = "and comes first by name"
		}
		return fmt.Sprintf("above %s req/s, %s costs as much as %s, %s", Rate(c.At), c.Above, c.BelowNext.NString(), how)
	case !Tied(c.Above, c.Below):
		return fmt.Sprintf("%s beat %s only above %s req/s, where %s no longer holds the rate (%s would cost %s/h)",
			c.Above, c.Below, Rate(c.At), c.Below.NString(), c.BelowNext.NString(), Money(c.BelowNext.PerHour))
	}
	return fmt.Sprintf("above %s req/s, %s beat %s", Rate(c.At), c.Above, c.BelowNext)
}

// Tied reports whether two options cost the same an hour.
func Tied(a, b Option) bool {
	return math.Abs(a.PerHour-b.PerHour) <= 1e-6*math.Max(a.PerHour, b.PerHour)
}

// NString is an option without its price: "2 × 2x".
func (o Option) NString() string { return fmt.Sprintf("%d × %s", o.N, o.Box) }

// Money writes a price: $1.20, $0.05, $0.125, $0.0926 (three significant
// digits below 1, at least two decimals). Prices are in whatever currency
// the plan's are; $ is only a sign that they are money.
func Money(v float64) string {
	switch {
	case math.IsInf(v, 0) || math.IsNaN(v):
		return "-"
	case v >= 1 || v == 0:
		return "$" + strconv.FormatFloat(v, 'f', 2, 64)
	}
	s := strconv.FormatFloat(v, 'f', 2-int(math.Floor(math.Log10(v))), 64)
	for strings.HasSuffix(s, "0") && len(s)-strings.IndexByte(s, '.') > 3 {
		s = s[:len(s)-1]
	}
	return "$" + s
}

// Rate writes a rate of requests per second: 340, 1,250, 12.5.
func Rate(v float64) string {
	if v >= 100 {
		s := strconv.FormatFloat(math.Round(v), 'f', 0, 64)
		var b strings.Builder
		for i, c := range s {
			if i > 0 && (len(s)-i)%3 == 0 {
				b.WriteByte(',')
			}
			b.WriteRune(c)
		}
		return b.String()
	}
	return strconv.FormatFloat(v, 'g', 3, 64)
}
