package chart_test

import (
	"bytes"
	"fmt"
	"strings"

	"github.com/loadlab/loadlab/internal/chart"
)

// A sweep of Puma threads with the spread of three runs and the knee.
func ExampleChart_SVG() {
	c := &chart.Chart{
		Title:  "Requests/s against Puma threads",
		XLabel: "threads",
		YLabel: "throughput",
		YUnit:  chart.PerSecond,
		YMin0:  true,
		Series: []chart.Series{{
			Name: "req/s",
			X:    []float64{1, 2, 3, 4, 5, 6, 7, 8},
			Y:    []float64{120, 230, 330, 410, 470, 480, 485, 430},
			Lo:   []float64{115, 220, 320, 395, 450, 465, 470, 400},
			Hi:   []float64{125, 240, 340, 420, 480, 490, 495, 450},
		}},
		Marks: []chart.Mark{{X: 5, Label: "knee"}},
	}
	var svg bytes.Buffer
	if err := c.SVG(&svg, 600, 360); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(strings.HasPrefix(svg.String(), "<svg"), svg.Len() < 60<<10)
	// Output: true true
}

// Two builds side by side against a memory quota.
func ExampleChart_PNG() {
	c := &chart.Chart{
		Title:   "Memory by allocator",
		YUnit:   chart.Bytes,
		YMin0:   true,
		XLabels: []string{"glibc", "jemalloc"},
		Series: []chart.Series{
			{Name: "average", X: []float64{0, 1}, Y: []float64{2100 << 20, 1500 << 20}},
			{Name: "peak", X: []float64{0, 1}, Y: []float64{2900 << 20, 2000 << 20}},
		},
		Levels: []chart.Level{{Y: 2560 << 20, Label: "quota"}},
	}
	var png bytes.Buffer
	if err := c.PNG(&png, 800, 480); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%q\n", png.Bytes()[1:4])
	// Output: "PNG"
}

func ExampleUnit_Format() {
	fmt.Println(chart.Bytes.Format(2560 << 20))
	fmt.Println(chart.Milliseconds.Format(0.25))
	fmt.Println(chart.Seconds.Format(600))
	fmt.Println(chart.PerSecond.Format(12345))
	fmt.Println(chart.Number.Format(1e6))
	// Output:
	// 2.5 GiB
	// 250 µs
	// 10 min
	// 12.3k/s
	// 1M
}
