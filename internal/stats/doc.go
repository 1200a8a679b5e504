// Package stats turns repeated measurements into the statistical claims
// loadlab reports: a median with its confidence interval, whether two sets
// of runs really differ, how a server scales with concurrency, and where
// adding concurrency stops paying.
//
// It is a pure library: no I/O, no clocks, no globals that change. The
// experiment runner and `loadlab compare` own the measurements and pass
// plain float64 slices in; stats owns nothing but the arithmetic. Every
// result type is made of finite numbers, strings and booleans, so it can be
// stored in result.json as is (encoding/json rejects NaN and Inf).
//
// # Summaries and comparisons
//
// Summarize and Compare follow benchstat's rules exactly, by calling
// golang.org/x/perf/benchmath with the AssumeNothing assumption: the center
// is the median, its confidence interval is distribution-free (order
// statistics), and two sample sets are compared with the two-sided
// Mann-Whitney U test. A difference is significant when p <= alpha
// (benchstat prints "~" only when p > alpha). The strings match benchstat's
// columns:
//
//	FormatCells(base, test)  "1000.5 ± 1%", "900.5 ± 1%" (one scale per row, as benchstat)
//	Summary.String()         "101.0 ± 2%", "11.00 ± ∞"
//	Comparison.String()      "+11.88% (p=0.008 n=5)", "~ (p=0.817 n=5)", "-6.10% (p=0.001 n=5+10)"
//
// benchstat writes "n=5" rather than "n=5+5" when both sides have the same
// size, "p=0.000" for a tiny p, and "?" as the delta when the baseline
// center is zero; so do we. Warnings that benchstat prints as footnotes
// (too few samples for an interval, too few to ever detect a difference,
// all samples equal) are returned in Warnings. Non-finite samples are
// dropped with a warning; empty input gives a zero Summary (N == 0) with a
// warning, never a panic. Where benchmath would give an infinite interval,
// Summary.Bounded is false instead.
//
//	func Summarize(samples []float64, confidence float64) Summary
//	func Compare(base, test []float64, alpha float64) Comparison
//	func CompareWith(base, test []float64, alpha, confidence float64) Comparison
//	func FormatCells(summaries ...Summary) []string
//
// Whether a comparison can say anything at all depends on the sample sizes
// alone: the Mann-Whitney test of n1 against n2 runs cannot give a p-value
// below MinP(n1, n2) = 2/C(n1+n2, n1), so a difference can be significant
// only when that is at most alpha (3 runs against 5: 0.036, yes; 3 against
// 4: 0.057, no). Comparison.Testable says so; RunsToTest and IntervalRuns
// say how many runs a point would take, and Comparison.Notes leaves out
// benchmath's own sample-size warnings for callers that say this in their
// own words.
//
//	func MinP(n1, n2 int) float64
//	func Testable(n1, n2 int, alpha float64) bool
//	func RunsToTest(alpha float64) int                   // 4 at 0.05
//	func RunsToTestAgainst(n int, alpha float64) int     // 5 against 3 at 0.05
//	func IntervalRuns(confidence float64) int            // 6 at 0.95
//
// # Paired comparisons and the noise floor
//
// An experiment's rounds pair its runs: ComparePaired judges test against
// base pair by pair, on the log ratios ln(testᵢ/baseᵢ), with the two-sided
// Wilcoxon signed-rank test (scipy.stats.wilcoxon's conventions: zeros
// dropped, exact to 50 differences without ties or zeros, the normal
// approximation with the tie correction otherwise, no continuity
// correction), the sign test under SignTestBelow (6) pairs, and the
// Hodges–Lehmann estimate of the median ratio with its distribution-free
// interval (Hollander & Wolfe §3.2, as R's wilcox.test(conf.int = TRUE)).
// benchmath has only unpaired tests and gonum none of these, so they are
// written here; TestPairedEqualsScipy checks them against scipy 1.10.
// DetectableChange is the smallest change n runs a side (or n pairs,
// DetectablePairedChange) detect at level alpha with 80% power, from a
// robust spread (RelativeSpread, SpreadOf).
//
//	func ComparePaired(base, test []float64, alpha float64) Paired
//	func WilcoxonSignedRank(d []float64) SignedRank
//	func SignTest(d []float64) (positive, negative int, p float64)
//	func EstimateShift(d []float64, confidence float64) HodgesLehmann
//	func DetectableChange(spread float64, n int, alpha float64) float64
//
// # Universal Scalability Law
//
// FitUSL fits Gunther's Universal Scalability Law
//
//	X(N) = λN / (1 + σ(N-1) + κN(N-1))
//
// to throughput X measured at concurrency N by bounded nonlinear least
// squares (Levenberg-Marquardt with σ >= 0, κ >= 0, λ > 0, started from
// λ at the smallest N and Gunther's linearisation), and reports σ
// (contention), κ (coherency), λ (throughput of one unit), the peak
// concurrency N* = sqrt((1-σ)/κ), the throughput there, and R² (undefined,
// and said to be, when every throughput is equal). When κ is 0
// there is no peak: throughput rises forever toward λ/σ, and the fit says so
// (HasPeak is false, String says "no peak") rather than reporting an
// infinite N*. Input with fewer than three distinct concurrency levels or
// non-positive values is an error wrapping ErrCannotFit.
//
//	func FitUSL(concurrency, throughput []float64) (USLFit, error)
//	func (USLFit) Throughput(n float64) float64
//
// # Knees and the best point
//
// For a curve y(x) measured at increasing x, where higher y is better
// (throughput against threads):
//
//	func BestIndex(y []float64) int                             // the highest y
//	func WithinOfBest(x, y []float64, fraction float64) int     // the smallest x with y >= best - fraction*|best|
//	func StepKnee(median, lo, hi []float64, share float64, significant func(j int) bool) StepKneeResult // the smallest level after which each step adds < share
//
// StepKnee is the knee a verdict reports: it means what a user reads into
// it, and says why when there is none (flat, still rising, not placed
// within one step, too few levels).
//
// # Lines
//
// FitLinear fits a least-squares line with Student's t intervals;
// FitTheilSen a robust one: the median of pairwise slopes (Theil 1950, Sen
// 1968) with Sen's distribution-free 95% interval (Hollander & Wolfe, §9.4;
// as scipy.stats.theilslopes), the intercept the median of y − slope·x. The
// memory fits of a sweep use Theil–Sen, which a stray run or two do not
// pull.
//
//	func FitLinear(x, y []float64) (Linear, error)
//	func FitTheilSen(x, y []float64) (TheilSen, error)
//
// # Change points
//
// For a series in time order (a figure's runs across commits), ChangePoints
// finds where its distribution shifted by E-divisive means (Matteson and
// James 2014), splitting on the energy statistic, which EnergyOf computes
// and which is checked against the figures MongoDB's signal-processing-
// algorithms publishes. Written here because no Go module implements it;
// it costs O(n²) per scan and 199 scans a permutation test: 40 values take
// 1.5 ms (BenchmarkChangePoints40, on a busy 2-core machine).
//
//	func EnergyOf(x, y []float64) Energy
//	func ChangePoints(xs []float64, o ChangePointOptions) []ChangePoint
package stats
