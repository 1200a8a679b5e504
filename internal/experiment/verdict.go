package experiment

import (
	"encoding/json"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/loadlab/loadlab/internal/result"
	"github.com/loadlab/loadlab/internal/spec"
	"github.com/loadlab/loadlab/internal/stats"
)

// Verdict is what an experiment found: every figure at every point with its
// spread, how each point differs from its reference and whether that is
// more than noise, where gains flatten along each numeric param, and a
// recommendation with its evidence.
//
// The verdict is data. The fields documented as text (Cell, Versus,
// Against, Recommendation, Warnings, Thresholds, Passed, Quota, Validity,
// Noise)
// are left empty by Analyze and filled by report.Describe, for readers of
// experiment.json; loadlab itself reads only the typed fields.
type Verdict struct {
	Baseline string `json:"baseline"`
	// ComparedParam is, in a matrix, the param each point is compared
	// along (the factor under study): a point's reference is the same point
	// with this param at ComparedValue. Empty when every point is compared
	// with the baseline.
	ComparedParam string `json:"compared_param,omitempty"`
	ComparedValue string `json:"compared_value,omitempty"`
	// ComparedWhy says how ComparedParam was chosen (spec.CompareReason):
	// "named" by the plan's compare:, "baseline" (the only param the
	// baseline names), "last" (the last param in the file) or "older" (a
	// file written before compare:, compared along its last param).
	ComparedWhy string `json:"compared_why,omitempty"`
	// Conditions are the matrix's other params: the factor is compared at
	// each combination of their values, and never recommended among.
	Conditions []string `json:"conditions,omitempty"`
	// Factor is the text of which param is compared, at which conditions,
	// and why that param: "server, each value against server=thin, at each
	// combination of c and per_vu (the plan's compare:)".
	Factor string `json:"factor,omitempty"`
	// Against is the text of what each point is compared with.
	Against string         `json:"against"`
	Figures []FigureTable  `json:"figures"`
	Sweeps  []SweepVerdict `json:"sweeps,omitempty"`
	// Named sums up each non-numeric param's values against its baseline
	// value (in a matrix, the factor's, at each combination of the
	// others).
	Named []NamedComparison `json:"named,omitempty"`
	// Sampling says what the numbers of runs allow.
	Sampling Sampling `json:"sampling"`
	// Incomplete lists the points with fewer runs done than repeat.
	Incomplete []PointRuns `json:"incomplete,omitempty"`
	// Notes are the statistics' own remarks on the baseline's throughput
	// and its comparisons (dropped samples, all samples equal), in the
	// words of package stats.
	Notes []string `json:"notes,omitempty"`
	// ThresholdTallies, QuotaTallies and ValidityTallies count thresholds,
	// memory quota overruns and validity warnings over the runs.
	ThresholdTallies []ThresholdTally `json:"threshold_tallies,omitempty"`
	QuotaTallies     []QuotaTally     `json:"quota_tallies,omitempty"`
	ValidityTallies  []ValidityTally  `json:"validity_tallies,omitempty"`
	// Drifts are the points whose throughput drifted between rounds;
	// MachineDrift a trend of the rounds' level across all points.
	Drifts       []Drift       `json:"drifts,omitempty"`
	MachineDrift *MachineDrift `json:"machine_drift,omitempty"`
	// Pairing says whether the changes are paired within rounds or not,
	// and which rounds were left out; NoiseFloor the smallest change of
	// the primary figure the runs can tell from noise.
	Pairing    *Pairing    `json:"pairing,omitempty"`
	NoiseFloor *NoiseFloor `json:"noise_floor,omitempty"`
	// Trust weighs the suspect runs against the figures the
	// recommendation rests on; it decides whether the recommendation is
	// headed NOT TRUSTED YET (Suspect alone is the older rule).
	Trust *Trust `json:"trust,omitempty"`
	// Sequential is the outcome's repeat: auto (Outcome.Sequential), for
	// the verdict's words.
	Sequential *Sequential `json:"sequential,omitempty"`
	// Suspect counts the runs whose measurement itself is in doubt (see
	// SuspectCodes); present when there is at least one. When they are
	// many (Untrusted), the recommendation says first that it cannot be
	// trusted yet, and why.
	Suspect *Suspect `json:"suspect,omitempty"`
	// Steps compare each step's own figures across the points, when the
	// runs have more than one step; Scenarios each scenario's, when they
	// have more than one scenario (see PartVerdict).
	Steps     []PartVerdict `json:"steps,omitempty"`
	Scenarios []PartVerdict `json:"scenarios,omitempty"`
	// StepChanges are the points at which one step alone changed.
	StepChanges []StepChange `json:"step_changes,omitempty"`
	// Boxes is which box, by price: present when a param's values are
	// boxes (spec.Box), see BoxVerdict.
	Boxes *BoxVerdict `json:"boxes,omitempty"`

	// Text, filled by report.Describe.
	Recommendation string   `json:"recommendation,omitempty"`
	Warnings       []string `json:"warnings,omitempty"`
	Thresholds     []string `json:"thresholds_failed,omitempty"`
	Passed         []string `json:"thresholds_passed,omitempty"`
	Quota          []string `json:"memory_quota,omitempty"`
	Validity       []string `json:"validity,omitempty"`
	// Noise says which analysis the changes are (paired or not, the
	// rounds left out) and the noise floor.
	Noise []string `json:"noise,omitempty"`
}

// PointRuns is a point with the runs it has and the runs it should have.
type PointRuns struct {
	Point string `json:"point"`
	Done  int    `json:"done"`
	Want  int    `json:"want"`
}

// FailedThresholds reports whether some threshold failed in some run.
func (v *Verdict) FailedThresholds() bool {
	for _, t := range v.ThresholdTallies {
		if t.Failed > 0 {
			return true
		}
	}
	return false
}

// FigureTable is one figure across the points.
type FigureTable struct {
	ID     FigureID    `json:"id"`
	Name   string      `json:"name"`
	Unit   string      `json:"unit"`
	Higher bool        `json:"higher_is_better"`
	Rows   []FigureRow `json:"rows"`
}

// FigureRow is one figure at one point: the median of the repeats with its
// confidence interval, and the change from its reference.
type FigureRow struct {
	Point     string `json:"point"`
	Baseline  bool   `json:"baseline,omitempty"`
	Reference string `json:"reference,omitempty"` // the point this one is compared with
	Spread
	Cell string `json:"cell"` // text: "123.4 ± 3%"
	// Change is the comparison with Reference that the verdict uses (see
	// Verdict.Pairing); nil when the point is its own reference or a side
	// has no runs. Unpaired and Paired are both analyses, the one of
	// them Change is included: Paired is absent without complete rounds.
	Change      *Change   `json:"change,omitempty"`
	Unpaired    *Change   `json:"unpaired,omitempty"`
	Paired      *Change   `json:"paired,omitempty"`
	Delta       float64   `json:"delta"` // Change.Delta: +0.12 is +12%
	P           float64   `json:"p"`     // Change.P
	Significant bool      `json:"significant"`
	Versus      string    `json:"versus"` // text: "+12.00% (p=0.008 n=5)", "~ (p=0.310 n=5)"
	Samples     []float64 `json:"samples"`
}

// SweepVerdict describes one numeric param swept with the others held at
// their baseline values; in a matrix, the factor swept at one condition
// (At).
type SweepVerdict struct {
	Param string `json:"param"`
	// At is the condition of a matrix's sweep: the other params' values
	// ("c=200", "per_vu=50"); empty when the others are at baseline.
	At         []string  `json:"at,omitempty"`
	X          []float64 `json:"x"`
	Points     []string  `json:"points"`     // the point of each level
	Throughput []float64 `json:"throughput"` // medians
	P95        []float64 `json:"p95_ms"`
	// ServerCPU is the median server CPU of each level, in % of a core,
	// when the server was measured.
	ServerCPU []float64 `json:"server_cpu,omitempty"`
	Best      int       `json:"best"` // index of the highest throughput
	// Knee is the index of the smallest level after which each further
	// step adds less than KneeShare of throughput (see stats.StepKnee);
	// absent when there is none, and KneeReason says why. Schema v1
	// wrote -1 for none and placed the knee by Kneedle.
	Knee      *int             `json:"knee,omitempty"`
	KneeShare float64          `json:"knee_share,omitempty"`
	KneeRange []int            `json:"knee_range,omitempty"` // [from, to] indices, when KneeReason is unplaced
	KneeWhy   stats.KneeReason `json:"knee_reason,omitempty"`
	Pick      int              `json:"pick"` // index recommended
	USL       *USL             `json:"usl,omitempty"`
	// USLWhy says why there is no USL fit, or why the recommendation does
	// not cite it; empty when it does.
	USLWhy USLReason `json:"usl_reason,omitempty"`
	// Evidence backs the pick, claim by claim.
	Evidence       []Evidence `json:"evidence"`
	Recommendation string     `json:"recommendation"` // text
	// Memory is the server's memory fitted against the param (see
	// MemoryFit), PSS peak first; absent without server figures.
	Memory []MemoryFit `json:"memory,omitempty"`
}

// UnmarshalJSON reads a sweep, the "knee": -1 of files written before
// knee_reason as no knee.
func (s *SweepVerdict) UnmarshalJSON(b []byte) error {
	type plain SweepVerdict
	if err := json.Unmarshal(b, (*plain)(s)); err != nil {
		return err
	}
	if s.Knee != nil && (*s.Knee < 0 || *s.Knee >= len(s.X)) {
		s.Knee = nil
	}
	return nil
}

// USLReason says why a sweep has no USL fit the recommendation can cite.
type USLReason string

const (
	USLTooFewLevels USLReason = "too_few_levels" // fewer than MinUSLPoints levels
	USLFitFailed    USLReason = "fit_failed"     // the fit did not converge or had no data to fit
	USLAllEqual     USLReason = "all_equal"      // every throughput equal: R² is 0/0
	USLLowR2        USLReason = "r2_low"         // R² at most MinUSLR2
)

// EvidenceKind names a claim behind a recommendation.
type EvidenceKind string

const (
	// BestThroughput: the pick has the highest throughput, Value req/s.
	BestThroughput EvidenceKind = "best_throughput"
	// WithinBestThroughput: the pick's throughput is within Change of the best's,
	// Value req/s at level Against.
	WithinBestThroughput EvidenceKind = "within_best"
	// LowerP95: the pick's p95 latency is Change lower than at the last
	// level, Against; Test says whether that is more than noise.
	LowerP95 EvidenceKind = "lower_p95"
	// KneeAt: each step after level At adds less than the sweep's
	// KneeShare of throughput. When the best level, Against, lies beyond
	// it, Change is the best's gain over the knee (small steps can add up)
	// and Test says whether that gain is more than noise.
	KneeAt EvidenceKind = "knee"
	// ThroughputFalls: throughput falls by Change from the best level, At,
	// to the last, Against; Test says whether that is more than noise.
	ThroughputFalls EvidenceKind = "throughput_falls"
	// USLPeak: the USL fit (R² above 0.8) peaks at At, Extrapolated when
	// outside the measured levels; USLNoPeak: the fit has no peak.
	USLPeak   EvidenceKind = "usl_peak"
	USLNoPeak EvidenceKind = "usl_no_peak"
	// TradeOff: what the pick, level At, costs against the baseline level,
	// Against, in latency and memory (Costs, figure by figure); absent
	// when the pick is the baseline or the sweep's line has none.
	TradeOff EvidenceKind = "trade_off"
)

// Cost is one figure of a pick's trade-off: its median at the baseline
// level (From) and at the pick (To), the change a fraction, and whether
// that change is more than noise.
type Cost struct {
	Figure FigureID `json:"figure"`
	Name   string   `json:"name"`
	Unit   string   `json:"unit"`
	From   float64  `json:"from"`
	To     float64  `json:"to"`
	Change float64  `json:"change"` // a fraction: 0.68 is 68% more
	Test   *Change  `json:"test,omitempty"`
}

// tradeOffFigures are the figures a pick's trade-off is told in: latency
// at the middle and the tail, and memory (PSS when measured, else RSS).
var tradeOffFigures = []FigureID{FigureP50, FigureP95, FigurePSSPeak, FigureRSSPeak}

// Evidence is one claim behind a recommendation.
type Evidence struct {
	Kind         EvidenceKind `json:"kind"`
	At           float64      `json:"at"`
	Against      float64      `json:"against"`
	Value        float64      `json:"value"`
	Change       float64      `json:"change"` // a fraction: 0.54 is 54%
	Test         *Change      `json:"test,omitempty"`
	Extrapolated bool         `json:"extrapolated,omitempty"`
	Costs        []Cost       `json:"costs,omitempty"` // TradeOff's figures
}

// USL is a Universal Scalability Law fit of throughput against the param.
type USL struct {
	Sigma, Kappa, Lambda float64
	HasPeak              bool
	PeakN, PeakX         float64
	Ceiling              float64 `json:",omitempty"` // λ/σ when κ = 0
	R2                   float64
	// R2Undefined: every throughput was equal, so R² (0/0) is not a number.
	R2Undefined bool     `json:",omitempty"`
	Text        string   // text, from package stats
	Warnings    []string `json:",omitempty"` // package stats' words for what the coefficients alone do not say
}

// Fit is the fit as package stats has it, to describe it.
func (u *USL) Fit() stats.USLFit {
	return stats.USLFit{Sigma: u.Sigma, Kappa: u.Kappa, Lambda: u.Lambda, HasPeak: u.HasPeak, PeakN: u.PeakN, PeakThroughput: u.PeakX,
		Ceiling: u.Ceiling, RSquared: u.R2, RSquaredDefined: !u.R2Undefined, Warnings: u.Warnings}
}

// NamedComparison is a value of a non-numeric param (allocator=jemalloc)
// against the param's baseline value, every figure's change.
type NamedComparison struct {
	Param     string `json:"param"`
	Value     string `json:"value"`
	Baseline  string `json:"baseline"` // the param's baseline value
	Point     string `json:"point"`
	Reference string `json:"reference"`
	// At lists the other params' values, in a matrix ("case=big").
	At      []string       `json:"at,omitempty"`
	Figures []FigureChange `json:"figures"`
}

// FigureChange is one figure's change in a named comparison.
type FigureChange struct {
	ID     FigureID `json:"id"`
	Name   string   `json:"name"`
	N      int      `json:"n"`
	Change Change   `json:"change"`
}

// ThresholdTally is one threshold over an experiment's runs, with the first
// failure as an example.
type ThresholdTally struct {
	Text          string `json:"threshold"`
	Runs          int    `json:"runs"`
	Failed        int    `json:"failed"`
	ExampleRun    int    `json:"example_run,omitempty"` // from 1
	ExamplePoint  string `json:"example_point,omitempty"`
	ExampleDetail string `json:"example_detail,omitempty"`
}

// QuotaTally counts a point's runs whose server memory (PSS + swap) went
// over its memory_quota, at peak and on average.
type QuotaTally struct {
	Point   string `json:"point"`
	Bytes   int64  `json:"quota_bytes"`
	Runs    int    `json:"runs"`
	Peak    int    `json:"peak_exceeded"`
	Average int    `json:"average_exceeded"`
}

// SuspectCodes are the validity warnings that put the measurement itself in
// doubt, rather than describe the server: the machine was busy or stole
// CPU, or loadlab could not keep up (saturated, late). A difference between
// points measured so is as likely the machine's as the settings'.
var SuspectCodes = []string{"machine_busy", "cpu_steal", "generator_saturated", "late"}

// UntrustedShare is the share of the runs with a suspect warning from which
// a recommendation is called untrusted: at a quarter, a point of four runs
// will usually have one tainted run or more, and its median may be it.
const UntrustedShare = 0.25

// Suspect is how many of an experiment's runs had a suspect warning
// (SuspectCodes), and how many had each.
type Suspect struct {
	Runs  int            `json:"runs"`
	Of    int            `json:"of"`
	Codes map[string]int `json:"codes"`
}

// Untrusted reports whether so many runs are suspect that the verdict's
// differences cannot be told from the machine's.
func (s *Suspect) Untrusted() bool {
	return s != nil && s.Of > 0 && float64(s.Runs) >= UntrustedShare*float64(s.Of)
}

// suspectRuns counts the finished runs with a warning of SuspectCodes.
func suspectRuns(results []*result.Result) *Suspect {
	out := &Suspect{Codes: map[string]int{}}
	for _, r := range results {
		if r == nil {
			continue
		}
		out.Of++
		tainted := false
		seen := map[string]bool{}
		for _, w := range r.Validity {
			if slices.Contains(SuspectCodes, w.Code) && !seen[w.Code] {
				seen[w.Code] = true
				out.Codes[w.Code]++
				tainted = true
			}
		}
		if tainted {
			out.Runs++
		}
	}
	if out.Runs == 0 {
		return nil
	}
	return out
}

// ValidityTally counts a point's runs that carried one validity warning
// (see Validity), with the first such run's message.
type ValidityTally struct {
	Point          string `json:"point"`
	Code           string `json:"code"`
	Runs           int    `json:"runs"`
	Of             int    `json:"of"`
	ExampleRun     int    `json:"example_run"` // from 1
	ExampleMessage string `json:"example_message"`
}

// MinUSLPoints is the fewest levels a USL fit is made from: its three
// coefficients pass exactly through three points and nearly through four,
// which would make R² no evidence at all.
const MinUSLPoints = 5

// Throughput is a run's responses (of any status) per second, computed from
// its counts so that results written when throughput_rps still counted
// failed requests compare alike: those that finished within the load's
// window over the window, or, in results written before there was one, all
// of them over the elapsed time.
func Throughput(r *result.Result) float64 { return summaryThroughput(&r.Summary) }

func always([]*result.Result) bool { return true }

func withServer(rs []*result.Result) bool {
	for _, r := range rs {
		if r != nil && r.Server != nil {
			return true
		}
	}
	return false
}

// finite runs: elapsed time says something only when the work is fixed.
func fixedWork(rs []*result.Result) bool {
	for _, r := range rs {
		if r != nil && r.Settings.Duration == 0 && r.Settings.Mode == "closed" {
			return true
		}
	}
	return false
}

const mib = 1 << 20

func withCapacity(rs []*result.Result) bool {
	for _, r := range rs {
		if r != nil && r.Capacity != nil {
			return true
		}
	}
	return false
}

// capacityUnit is what the capacity figure counts: per second, or VUs.
func capacityUnit(rs []*result.Result) string {
	for _, r := range rs {
		if r != nil && r.Capacity != nil && r.Capacity.By == "vus" {
			return "VUs"
		}
	}
	return "/s"
}

var figures = []figure{
	{FigureCapacity, "capacity", "/s", true, func(r *result.Result) (float64, bool) {
		if r.Capacity == nil {
			return 0, false
		}
		return r.Capacity.Answer(), true
	}, withCapacity},
	{FigureThroughput, "throughput", "req/s", true, func(r *result.Result) (float64, bool) { return Throughput(r), true }, always},
	{FigureP50, "p50 latency", "ms", false, func(r *result.Result) (float64, bool) { return r.Summary.Latency.P50, r.Summary.Latency.Count > 0 }, always},
	{FigureP95, "p95 latency", "ms", false, func(r *result.Result) (float64, bool) { return r.Summary.Latency.P95, r.Summary.Latency.Count > 0 }, always},
	{FigureP99, "p99 latency", "ms", false, func(r *result.Result) (float64, bool) { return r.Summary.Latency.P99, r.Summary.Latency.Count > 0 }, always},
	{FigureErrorRate, "error rate", "%", false, func(r *result.Result) (float64, bool) { return 100 * r.Summary.ErrorRate, true }, always},
	{FigureElapsed, "elapsed", "s", false, func(r *result.Result) (float64, bool) { return r.Summary.DurationS, true }, fixedWork},
	{FigureCPU, "server CPU", "% of a core", false, func(r *result.Result) (float64, bool) {
		if r.Server == nil {
			return 0, false
		}
		return r.Server.CPUAvg, true
	}, withServer},
	{FigureRSSPeak, "RSS peak", "MiB", false, func(r *result.Result) (float64, bool) {
		if r.Server == nil {
			return 0, false
		}
		return float64(r.Server.RSSPeak) / mib, true
	}, withServer},
	{FigureRSSAverage, "RSS average", "MiB", false, func(r *result.Result) (float64, bool) {
		if r.Server == nil {
			return 0, false
		}
		return float64(r.Server.RSSAvg) / mib, true
	}, withServer},
	{FigurePSSPeak, "PSS peak", "MiB", false, func(r *result.Result) (float64, bool) {
		if r.Server == nil {
			return 0, false
		}
		return float64(r.Server.PSSPeak) / mib, true
	}, withServer},
	{FigurePSSAverage, "PSS average", "MiB", false, func(r *result.Result) (float64, bool) {
		if r.Server == nil {
			return 0, false
		}
		return float64(r.Server.PSSAvg) / mib, true
	}, withServer},
}

// Alpha is the significance level of comparisons (benchstat's default).
const Alpha = 0.05

// WithinBest is how close to the best throughput a recommended setting must
// come: the smallest setting within 5% of the best wins, as it does the same
// work with fewer threads, workers or connections.
const WithinBest = 0.05

// Analyze computes the verdict from the done runs.
func Analyze(e *spec.Experiment, points []Point, order []Slot, results []*result.Result) *Verdict {
	return AnalyzeSequential(e, points, order, results, nil)
}

// AnalyzeSequential is Analyze for an experiment that repeat: auto ran
// (seq its looks; nil for a fixed repeat): the primary figure's paired
// changes are judged as its looks judged them, so that a verdict never
// calls significant what the looks, holding α over all of them, did not.
func AnalyzeSequential(e *spec.Experiment, points []Point, order []Slot, results []*result.Result, seq *Sequential) *Verdict {
	v := &Verdict{Sequential: seq}
	params := outcomeParams(e)
	byPoint := make([][]*result.Result, len(points))
	for _, s := range order {
		if r := results[s.Index]; r != nil {
			byPoint[s.Point] = append(byPoint[s.Point], r)
		}
	}
	base := -1
	for i, p := range points {
		if p.Baseline {
			base = i
			v.Baseline = p.Key
		}
	}
	factor, why := Factor(e)
	refs := references(e, points, base, factor)
	for _, prm := range params {
		switch {
		case factor == "":
		case prm.Name == factor:
			v.ComparedParam, v.ComparedValue, v.ComparedWhy = prm.Name, prm.Baseline, string(why)
		default:
			v.Conditions = append(v.Conditions, prm.Name)
		}
	}
	var runs []int
	for i, rs := range byPoint {
		runs = append(runs, len(rs))
		if len(rs) < e.Repeat {
			v.Incomplete = append(v.Incomplete, PointRuns{Point: points[i].Key, Done: len(rs), Want: e.Repeat})
		}
	}
	complete, left, kept := rounds(points, order, results)
	v.Pairing = &Pairing{Analysis: Unpaired, Rounds: complete, Left: left, Kept: kept, Need: stats.PairsToTest(Alpha)}
	switch {
	case len(points) < 2:
		v.Pairing.Why = OnePoint
	case len(complete) < v.Pairing.Need:
		v.Pairing.Why = TooFewRounds
	default:
		v.Pairing.Analysis, v.Pairing.Why = Paired, PairedRounds
	}
	cmp := comparer{paired: v.Pairing.Analysis == Paired, rounds: map[FigureID][][]float64{}}
	var changes []Change
	for _, f := range figures {
		if !f.applies(results) {
			continue
		}
		t := FigureTable{ID: f.id, Name: f.name, Unit: f.unit, Higher: f.higher}
		if f.id == FigureCapacity {
			t.Unit = capacityUnit(results)
		}
		samples := make([][]float64, len(points))
		for i, rs := range byPoint {
			for _, r := range rs {
				if x, ok := f.get(r); ok {
					samples[i] = append(samples[i], x)
				}
			}
		}
		var perRound [][]float64
		if len(complete) > 0 {
			perRound = byRound(f, points, order, results, complete)
			cmp.rounds[f.id] = perRound
		}
		for i, p := range points {
			row := FigureRow{Point: p.Key, Baseline: i == base, Spread: spreadOf(samples[i]), Samples: samples[i]}
			if ref := refs[i]; ref >= 0 && ref != i && len(samples[i]) > 0 && len(samples[ref]) > 0 {
				c := compareRuns(samples[ref], samples[i])
				row.Unpaired, row.Reference = &c, points[ref].Key
				if perRound != nil {
					pc := comparePaired(perRound[ref], perRound[i])
					if seq != nil && seq.Figure == f.id {
						pc = seq.judge(pc, p.Key)
					}
					row.Paired = &pc
				}
				row.Change = row.Unpaired
				if cmp.paired && row.Paired != nil {
					row.Change = row.Paired
				}
				row.Delta, row.P, row.Significant = row.Change.Delta, row.Change.P, row.Change.Significant()
				changes = append(changes, *row.Change)
			}
			t.Rows = append(t.Rows, row)
		}
		v.Figures = append(v.Figures, t)
	}
	v.Sampling = newSampling(runs, changes)
	if base >= 0 {
		seen := map[string]bool{}
		note := func(ws []string) {
			for _, w := range ws {
				if !seen[w] && !stats.IsSampleSizeWarning(w) {
					seen[w] = true
					v.Notes = append(v.Notes, w)
				}
			}
		}
		note(stats.Summarize(samplesOf(byPoint[base]), 0).Warnings)
		for i := range points {
			if i != base {
				note(stats.Compare(samplesOf(byPoint[base]), samplesOf(byPoint[i]), Alpha).Warnings)
			}
		}
	}
	v.ThresholdTallies = thresholdTally(points, order, results)
	v.QuotaTallies = quotaTally(points, byPoint)
	v.ValidityTallies = validityTally(points, order, results)
	v.Suspect = suspectRuns(results)
	v.Drifts = drifts(points, order, results)
	v.MachineDrift = machineDrift(v, cmp.rounds, complete)
	v.NoiseFloor = noiseFloor(v, base, refs, cmp.rounds)
	v.Sweeps = sweeps(params, points, v, e.KneeShare, factor, cmp)
	for i := range v.Sweeps {
		v.Sweeps[i].Memory = memoryFits(v.Sweeps[i], points, v, byPoint)
	}
	v.Named = namedComparisons(params, points, v, factor)
	v.Steps, v.Scenarios = partVerdicts(points, byPoint, refs, base)
	v.StepChanges = stepChanges(points, v.Steps)
	v.Boxes = boxVerdict(e, points, v, byPoint)
	v.Trust = trust(v, results)
	return v
}

// Factor is the param a matrix of two params or more studies, and how it
// was chosen: the plan's compare:, or (a plan that did not say, or an
// experiment.json written before compare:) the last param. Empty for
// other experiments, whose points are each compared with the baseline.
func Factor(e *spec.Experiment) (string, spec.CompareReason) {
	if e.Vary != spec.Matrix || len(e.Params) < 2 {
		return "", ""
	}
	for _, prm := range e.Params {
		if prm.Name == e.Compare && e.CompareWhy != "" {
			return prm.Name, e.CompareWhy
		}
	}
	return e.Params[len(e.Params)-1].Name, spec.CompareLast
}

// outcomeParams are the plan's params with their baseline values.
func outcomeParams(e *spec.Experiment) []Param {
	var out []Param
	for _, prm := range e.Params {
		op := Param{Name: prm.Name, Numeric: prm.Numeric, Baseline: prm.Values[e.Baseline[prm.Name]].Label, Boxes: boxPrices(prm)}
		for _, v := range prm.Values {
			op.Values = append(op.Values, v.Label)
		}
		out = append(out, op)
	}
	return out
}

// OthersAtBaseline reports whether every param but except has its baseline
// value at p: the rule that puts p on the line along which except is swept
// (its chart, its knee and USL fit) and that compares a value of except
// with except's baseline value alone. This is the only place it is stated.
func (p Point) OthersAtBaseline(params []Param, except string) bool {
	for _, o := range params {
		if o.Name != except && p.Labels[o.Name] != o.Baseline {
			return false
		}
	}
	return true
}

// quotaTally counts, per point, the runs whose server memory (PSS) went
// over the quota at peak and on average: a hosting platform's memory alarm.
func quotaTally(points []Point, byPoint [][]*result.Result) []QuotaTally {
	var out []QuotaTally
	for i, rs := range byPoint {
		q := QuotaTally{Point: points[i].Key, Runs: len(rs)}
		for _, r := range rs {
			if r.Server == nil || r.Server.Quota == nil {
				continue
			}
			q.Bytes = r.Server.Quota.Bytes
			if r.Server.Quota.PeakExceeded {
				q.Peak++
			}
			if r.Server.Quota.AverageExceeded {
				q.Average++
			}
		}
		if q.Bytes != 0 {
			out = append(out, q)
		}
	}
	return out
}

// validityTally counts, per point, the runs that carried each validity
// warning, with the first such run's message.
func validityTally(points []Point, order []Slot, results []*result.Result) []ValidityTally {
	var out []ValidityTally
	for i := range points {
		runs := 0
		counts := map[string]*ValidityTally{}
		var codes []string
		for _, s := range order {
			r := results[s.Index]
			if s.Point != i || r == nil {
				continue
			}
			runs++
			seen := map[string]bool{}
			for _, w := range r.Validity {
				if seen[w.Code] {
					continue
				}
				seen[w.Code] = true
				c := counts[w.Code]
				if c == nil {
					c = &ValidityTally{Point: points[i].Key, Code: w.Code, ExampleRun: s.Index + 1, ExampleMessage: w.Message}
					counts[w.Code] = c
					codes = append(codes, w.Code)
				}
				c.Runs++
			}
		}
		for _, code := range codes {
			c := counts[code]
			c.Of = runs
			out = append(out, *c)
		}
	}
	return out
}

// Drift is a point whose throughput drifted between rounds: run after run,
// in the order they ran, it only rose or only fell, by DriftShare or more
// from the first to the last, over at least DriftMinRuns runs. Noise
// between repeats goes up and down; a trend says the machine changed under
// the experiment (a neighbour that started, a host that began to steal
// time, a server that warms up or leaks), which the shuffled order spreads
// over every point but does not remove.
type Drift struct {
	Point      string    `json:"point"`
	Throughput []float64 `json:"throughput"` // req/s, run by run in the order they ran
	Runs       []int     `json:"runs"`       // their run numbers, from 1
	Change     float64   `json:"change"`     // the last against the first, a fraction: -0.4 fell by 40%
}

// DriftMinRuns and DriftShare define a drift: a random order of 4 runs is
// monotone 1 time in 12, of 5 runs 1 in 60, and it must move 10% too.
const (
	DriftMinRuns = 4
	DriftShare   = 0.10
)

// drifts finds the points whose throughput drifted between rounds.
func drifts(points []Point, order []Slot, results []*result.Result) []Drift {
	var out []Drift
	for i := range points {
		d := Drift{Point: points[i].Key}
		for _, s := range order {
			if r := results[s.Index]; s.Point == i && r != nil {
				d.Throughput = append(d.Throughput, Throughput(r))
				d.Runs = append(d.Runs, s.Index+1)
			}
		}
		x := d.Throughput
		if len(x) < DriftMinRuns || x[0] <= 0 {
			continue
		}
		rising, falling := true, true
		for j := 1; j < len(x); j++ {
			rising = rising && x[j] > x[j-1]
			falling = falling && x[j] < x[j-1]
		}
		d.Change = x[len(x)-1]/x[0] - 1
		if (rising || falling) && math.Abs(d.Change) >= DriftShare {
			out = append(out, d)
		}
	}
	return out
}

// thresholdTally sums up the thresholds run by run: how often each failed,
// with the first failure as an example.
func thresholdTally(points []Point, order []Slot, results []*result.Result) []ThresholdTally {
	counts := map[string]*ThresholdTally{}
	var texts []string
	for _, s := range order {
		r := results[s.Index]
		if r == nil {
			continue
		}
		for _, t := range r.Thresholds {
			c := counts[t.Text]
			if c == nil {
				c = &ThresholdTally{Text: t.Text}
				counts[t.Text] = c
				texts = append(texts, t.Text)
			}
			c.Runs++
			if !t.Pass {
				c.Failed++
				if c.ExampleRun == 0 {
					c.ExampleRun, c.ExamplePoint, c.ExampleDetail = s.Index+1, points[s.Point].Key, t.Detail
				}
			}
		}
	}
	var out []ThresholdTally
	for _, text := range texts {
		out = append(out, *counts[text])
	}
	return out
}

func samplesOf(rs []*result.Result) []float64 {
	var out []float64
	for _, r := range rs {
		out = append(out, Throughput(r))
	}
	return out
}

// references says which point each point is compared with: the baseline;
// in a matrix, the point that differs only in the factor (Factor), set to
// its baseline value. A point that is its own reference has none (-1 when
// there is none at all).
func references(e *spec.Experiment, points []Point, base int, factor string) []int {
	refs := make([]int, len(points))
	for i := range points {
		refs[i] = base
	}
	if factor == "" {
		return refs
	}
	var baseLabel string
	for _, prm := range e.Params {
		if prm.Name == factor {
			baseLabel = prm.Values[e.Baseline[prm.Name]].Label
		}
	}
	for i, p := range points {
		refs[i] = -1
		for j, q := range points {
			same := q.Labels[factor] == baseLabel
			for _, prm := range e.Params {
				same = same && (prm.Name == factor || q.Labels[prm.Name] == p.Labels[prm.Name])
			}
			if same {
				refs[i] = j
			}
		}
	}
	return refs
}

// Table returns the verdict's table of a figure, nil when it has none.
func (v *Verdict) Table(id FigureID) *FigureTable {
	for i := range v.Figures {
		if v.Figures[i].ID == id {
			return &v.Figures[i]
		}
	}
	return nil
}

// Row is point's row of the figure id, with its table; nil, nil without
// one (or without a verdict).
func (v *Verdict) Row(id FigureID, point string) (*FigureTable, *FigureRow) {
	if v == nil {
		return nil, nil
	}
	t := v.Table(id)
	if t == nil {
		return nil, nil
	}
	for j := range t.Rows {
		if t.Rows[j].Point == point {
			return t, &t.Rows[j]
		}
	}
	return nil, nil
}

// sweepLine is the points along which a numeric param is swept, and the
// other params' values there, in a matrix.
type sweepLine struct {
	prm    Param
	at     []string
	points []int
}

// sweepLines are the lines to sweep: each numeric param with the other
// params at baseline; in a matrix, only its factor (when numeric), at each
// combination of the other params, the baseline's first. A condition of a
// matrix is never swept: it is not a setting to recommend.
func sweepLines(params []Param, points []Point, factor string) []sweepLine {
	var out []sweepLine
	for _, prm := range params {
		if !prm.Numeric || len(prm.Values) < 2 || (factor != "" && prm.Name != factor) {
			continue
		}
		if factor == "" {
			l := sweepLine{prm: prm}
			for i, p := range points {
				if p.OthersAtBaseline(params, prm.Name) {
					l.points = append(l.points, i)
				}
			}
			out = append(out, l)
			continue
		}
		byCondition := map[string]int{}
		for i, p := range points {
			var at []string
			for _, o := range params {
				if o.Name != factor {
					at = append(at, o.Name+"="+p.Labels[o.Name])
				}
			}
			key := strings.Join(at, " ")
			k, ok := byCondition[key]
			if !ok {
				k = len(out)
				byCondition[key] = k
				out = append(out, sweepLine{prm: prm, at: at})
			}
			out[k].points = append(out[k].points, i)
		}
	}
	return out
}

// sweeps looks along each numeric param with the other params at baseline;
// in a matrix, along its factor at each condition.
func sweeps(params []Param, points []Point, v *Verdict, kneeShare float64, factor string, cmp comparer) []SweepVerdict {
	tp, p95, cpu := v.Table(FigureThroughput), v.Table(FigureP95), v.Table(FigureCPU)
	if tp == nil || p95 == nil {
		return nil
	}
	if kneeShare <= 0 {
		kneeShare = stats.DefaultKneeShare
	}
	var out []SweepVerdict
	for _, line := range sweepLines(params, points, factor) {
		prm := line.prm
		type pt struct {
			x       float64
			tp, p95 float64
			point   int
		}
		var pts []pt
		for _, i := range line.points {
			p := points[i]
			if tp.Rows[i].N == 0 {
				continue
			}
			x, err := strconv.ParseFloat(p.Labels[prm.Name], 64)
			if err != nil {
				continue
			}
			pts = append(pts, pt{x: x, tp: tp.Rows[i].Median, p95: p95.Rows[i].Median, point: i})
		}
		if len(pts) < 2 {
			continue
		}
		sort.Slice(pts, func(i, j int) bool { return pts[i].x < pts[j].x })
		s := SweepVerdict{Param: prm.Name, At: line.at, KneeShare: kneeShare}
		var lo, hi []float64
		for _, p := range pts {
			s.X = append(s.X, p.x)
			s.Points = append(s.Points, points[p.point].Key)
			s.Throughput = append(s.Throughput, p.tp)
			s.P95 = append(s.P95, p.p95)
			lo, hi = append(lo, tp.Rows[p.point].Min), append(hi, tp.Rows[p.point].Max)
			if cpu != nil {
				s.ServerCPU = append(s.ServerCPU, cpu.Rows[p.point].Median)
			}
		}
		s.Best = stats.BestIndex(s.Throughput)
		// A step is more than noise when the runs of its two levels do
		// not overlap, or the verdict's test (Mann-Whitney, or paired
		// within rounds) says so.
		stepSignificant := func(j int) bool {
			c := cmp.between(tp, pts[j-1].point, pts[j].point)
			return c.Significant() && c.Delta > 0
		}
		switch k := stats.StepKnee(s.Throughput, lo, hi, kneeShare, stepSignificant); {
		case k.Placed:
			s.Knee = &k.Index
		case k.Reason == stats.KneeUnplaced:
			s.KneeRange, s.KneeWhy = []int{k.From, k.To}, k.Reason
		default:
			s.KneeWhy = k.Reason
		}
		s.Pick = stats.WithinOfBest(s.X, s.Throughput, WithinBest)
		if s.Pick < 0 {
			s.Pick = s.Best
		}
		if len(s.X) >= MinUSLPoints {
			if fit, err := stats.FitUSL(s.X, s.Throughput); err == nil {
				s.USL = &USL{Sigma: fit.Sigma, Kappa: fit.Kappa, Lambda: fit.Lambda, HasPeak: fit.HasPeak, PeakN: fit.PeakN, PeakX: fit.PeakThroughput,
					Ceiling: fit.Ceiling, R2: fit.RSquared, R2Undefined: !fit.RSquaredDefined, Warnings: fit.Warnings}
			} else {
				s.USLWhy = USLFitFailed
			}
		} else {
			s.USLWhy = USLTooFewLevels
		}
		switch u := s.USL; {
		case u == nil:
		case u.R2Undefined:
			s.USLWhy = USLAllEqual
		case !(u.R2 > MinUSLR2):
			s.USLWhy = USLLowR2
		}
		// test compares a figure between two levels of the sweep: a
		// claim that is not significant is qualified.
		test := func(t *FigureTable, from, to int) *Change {
			c := cmp.between(t, pts[from].point, pts[to].point)
			return &c
		}
		s.Evidence = evidence(s, func(fig FigureID, from, to int) *Change {
			if fig == FigureP95 {
				return test(p95, from, to)
			}
			return test(tp, from, to)
		})
		base := slices.IndexFunc(pts, func(p pt) bool { return points[p.point].Labels[prm.Name] == prm.Baseline })
		if e, ok := tradeOff(v, s, base, func(i int) int { return pts[i].point }, cmp); ok {
			s.Evidence = append(s.Evidence, e)
		}
		out = append(out, s)
	}
	return out
}

// tradeOff is what a sweep's pick costs against its baseline level (base,
// an index into the sweep's levels; -1 when the line has none): the
// medians of latency and memory at both, and each change's test. point
// maps a level to its point.
func tradeOff(v *Verdict, s SweepVerdict, base int, point func(int) int, cmp comparer) (Evidence, bool) {
	if base < 0 || base == s.Pick {
		return Evidence{}, false
	}
	e := Evidence{Kind: TradeOff, At: s.X[s.Pick], Against: s.X[base]}
	for _, id := range tradeOffFigures {
		t := v.Table(id)
		if t == nil || (id == FigureRSSPeak && v.Table(FigurePSSPeak) != nil) {
			continue
		}
		from, to := t.Rows[point(base)], t.Rows[point(s.Pick)]
		if from.N == 0 || to.N == 0 || from.Median <= 0 {
			continue
		}
		c := cmp.between(t, point(base), point(s.Pick))
		e.Costs = append(e.Costs, Cost{Figure: id, Name: t.Name, Unit: t.Unit, From: from.Median, To: to.Median, Change: to.Median/from.Median - 1, Test: &c})
	}
	return e, len(e.Costs) > 0
}

// MinUSLR2 is the least R² of a USL fit that the recommendation cites.
const MinUSLR2 = 0.8

// evidence lists the claims behind a numeric sweep's pick; test compares a
// figure between two levels.
func evidence(s SweepVerdict, test func(fig FigureID, from, to int) *Change) []Evidence {
	pick, best := s.Pick, s.Best
	last := len(s.X) - 1
	var out []Evidence
	if pick == best {
		out = append(out, Evidence{Kind: BestThroughput, At: s.X[best], Value: s.Throughput[best]})
	} else {
		out = append(out, Evidence{Kind: WithinBestThroughput, At: s.X[pick], Against: s.X[best], Value: s.Throughput[best], Change: max(1-s.Throughput[pick]/s.Throughput[best], 0)})
	}
	if pick != last && s.P95[last] > 0 && s.P95[pick] < s.P95[last]*0.95 {
		out = append(out, Evidence{Kind: LowerP95, At: s.X[pick], Against: s.X[last], Change: 1 - s.P95[pick]/s.P95[last], Test: test(FigureP95, last, pick)})
	}
	if s.Knee != nil {
		// Steps under the share can add up: how much the best level still
		// gains over the knee, and whether that is noise, goes with the
		// claim.
		k := *s.Knee
		e := Evidence{Kind: KneeAt, At: s.X[k]}
		if best > k && s.Throughput[k] > 0 {
			e.Against, e.Change = s.X[best], s.Throughput[best]/s.Throughput[k]-1
			e.Test = test(FigureThroughput, k, best)
		}
		out = append(out, e)
	}
	if best < last && s.Throughput[last] < s.Throughput[best]*(1-WithinBest) {
		out = append(out, Evidence{Kind: ThroughputFalls, At: s.X[best], Against: s.X[last], Change: 1 - s.Throughput[last]/s.Throughput[best], Test: test(FigureThroughput, best, last)})
	}
	if u := s.USL; u != nil && !u.R2Undefined && u.R2 > MinUSLR2 {
		if u.HasPeak {
			out = append(out, Evidence{Kind: USLPeak, At: u.PeakN, Value: u.PeakX, Extrapolated: u.PeakN > s.X[last] || u.PeakN < s.X[0]})
		} else {
			out = append(out, Evidence{Kind: USLNoPeak})
		}
	}
	return out
}

// namedComparisons sums up non-numeric params (glibc vs jemalloc): each
// figure's change against the baseline value; in a matrix, the factor's
// values, numeric or not, at each combination of the other params.
func namedComparisons(params []Param, points []Point, v *Verdict, factor string) []NamedComparison {
	var out []NamedComparison
	matrix := factor != ""
	for _, prm := range params {
		if matrix && prm.Name != factor {
			continue // in a matrix, the factor is the one compared
		}
		if prm.Numeric && !matrix {
			continue
		}
		for i, p := range points {
			if p.Baseline || p.Labels[prm.Name] == prm.Baseline {
				continue
			}
			if !matrix && !p.OthersAtBaseline(params, prm.Name) {
				continue
			}
			nc := NamedComparison{Param: prm.Name, Value: p.Labels[prm.Name], Baseline: prm.Baseline, Point: p.Key}
			if matrix {
				for _, o := range params {
					if o.Name != factor {
						nc.At = append(nc.At, o.Name+"="+p.Labels[o.Name])
					}
				}
			}
			for _, t := range v.Figures {
				r := t.Rows[i]
				if r.N == 0 || r.Baseline || r.Change == nil {
					continue
				}
				nc.Reference = r.Reference
				nc.Figures = append(nc.Figures, FigureChange{ID: t.ID, Name: t.Name, N: r.N, Change: *r.Change})
			}
			out = append(out, nc)
		}
	}
	return out
}
