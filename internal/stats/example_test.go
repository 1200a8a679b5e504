package stats_test

import (
	"fmt"

	"github.com/loadlab/loadlab/internal/stats"
)

// Requests per second of five runs of a baseline build and five of a test
// build, compared the way benchstat compares benchmark results.
func ExampleCompare() {
	base := []float64{100, 102, 101, 99, 103}
	test := []float64{112, 114, 113, 111, 115}
	c := stats.Compare(base, test, 0.05)
	cells := stats.FormatCells(c.Base, c.Test)
	fmt.Println(cells[0], "→", cells[1], c)
	for _, w := range c.AllWarnings() {
		fmt.Println("note:", w)
	}
	// Output:
	// 101.0 ± ∞ → 113.0 ± ∞ +11.88% (p=0.008 n=5)
	// note: baseline: need >= 6 samples for confidence interval at level 0.95
	// note: test: need >= 6 samples for confidence interval at level 0.95
}

// The Cisco benchmark of Schwartz's "Practical Scalability Analysis with the
// Universal Scalability Law", queries/s against concurrency 1..32.
func ExampleFitUSL() {
	concurrency := []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16,
		17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32}
	throughput := []float64{955.16, 1878.91, 2688.01, 3548.68, 4315.54, 5130.43, 5931.37, 6531.08,
		7219.8, 7867.61, 8278.71, 8646.7, 9047.84, 9426.55, 9645.37, 9897.24,
		10097.6, 10240.5, 10532.39, 10798.52, 11151.43, 11518.63, 11806, 12089.37,
		12075.41, 12177.29, 12211.41, 12158.93, 12155.27, 12118.04, 12140.4, 12074.39}
	fit, err := stats.FitUSL(concurrency, throughput)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(fit)
	for _, w := range fit.Warnings {
		fmt.Println("note:", w)
	}
	// Output:
	// σ=0.0267159 κ=0.000769094 λ=995.649 R²=0.9972: peak throughput 12342.9 at N=35.5738
	// note: the peak N=35.6 lies beyond the largest measured concurrency 32: it is extrapolated
}

// Requests per second against Puma threads 1..10 (one run each): where each
// further step adds less than 5%, the best point, and the fewest threads
// within 5% of the best.
func ExampleStepKnee() {
	threads := []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	rps := []float64{50, 100, 148, 190, 225, 230, 233, 235, 220, 200}
	if knee := stats.StepKnee(rps, rps, rps, stats.DefaultKneeShare, nil); knee.Placed {
		fmt.Println("gains under 5% a step after", threads[knee.Index], "threads")
	}
	fmt.Println("best:", threads[stats.BestIndex(rps)], "threads")
	fmt.Println("within 5% of best:", threads[stats.WithinOfBest(threads, rps, 0.05)], "threads")
	// Output:
	// gains under 5% a step after 5 threads
	// best: 8 threads
	// within 5% of best: 5 threads
}
