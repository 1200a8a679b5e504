package report

import (
	"bytes"
	"encoding/json"
	"html"
	"io"
	"strings"
	"testing"

	"github.com/loadlab/loadlab/internal/experiment"
	"github.com/loadlab/loadlab/internal/result"
)

// side is runs with these throughputs (and p95 latencies twice as many ms).
func side(label string, rps ...float64) experiment.Side {
	s := experiment.Side{Label: label}
	for _, x := range rps {
		s.Results = append(s.Results, &result.Result{Summary: result.Summary{Requests: int64(x), Responses: int64(x), DurationS: 1,
			Latency: result.Percentiles{Count: 10, P50: x, P95: 2 * x, P99: 3 * x}}})
	}
	return s
}

// TestThreeAgainstFiveIsPrintedAsBenchstatDoes: 3 runs against 5 reach
// p = 0.036; the change reads as benchstat's, in every format, and the
// notes say nothing of "need >= 4 samples".
func TestThreeAgainstFiveIsPrintedAsBenchstatDoes(t *testing.T) {
	c := experiment.Compare(side("a", 100, 101, 102), side("b", 90, 91, 92, 93, 94))
	for name, f := range map[string]func(io.Writer, *experiment.Comparison) error{
		"text": Comparison, "md": ComparisonMarkdown, "html": ComparisonHTML, "json": ComparisonJSON,
	} {
		out := html.UnescapeString(string(render(t, func(w io.Writer) error { return f(w, c) })))
		if !strings.Contains(out, "-8.91% (p=0.036 n=3+5)") || strings.Contains(out, "untested)") || strings.Contains(out, "need &gt;=") || strings.Contains(out, "need >=") {
			t.Errorf("%s:\n%s", name, out)
		}
	}
	var parsed struct {
		Figures []struct {
			Key    string            `json:"key"`
			Change experiment.Change `json:"change"`
		} `json:"figures"`
	}
	if err := json.Unmarshal(render(t, func(w io.Writer) error { return ComparisonJSON(w, c) }), &parsed); err != nil {
		t.Fatal(err)
	}
	if f := parsed.Figures[0]; f.Key != "throughput" || f.Change.Status != experiment.Significant || f.Change.N1 != 3 || f.Change.N2 != 5 {
		t.Errorf("JSON figure %+v", f)
	}
	text := string(render(t, func(w io.Writer) error { return Comparison(w, c) }))
	if !strings.Contains(text, "note: with 3 runs of A and 5 of B, each cell shows the median and the lowest and highest run (a 95% confidence interval takes 6)\n") {
		t.Errorf("the notes do not explain the cells:\n%s", text)
	}
}

// TestFailureText: a failure says whether a test or the medians decided,
// with numbers that are true for the runs at hand.
func TestFailureText(t *testing.T) {
	rule, _ := experiment.ParseRule("throughput -5%")
	few := experiment.Compare(side("a", 100, 101, 102), side("b", 90, 91, 92, 93))
	fs, err := few.Check([]experiment.Rule{rule})
	if err != nil || len(fs) != 1 {
		t.Fatalf("3 against 4: %+v, %v", fs, err)
	}
	if got := FailureText(fs[0]); got != "throughput changed -9.4%, beyond throughput -5% (median against median: with 3 and 4 runs no test can tell it from noise)" {
		t.Errorf("3 against 4: %q", got)
	}
	text := string(render(t, func(w io.Writer) error { return Comparison(w, few) }))
	if !strings.Contains(text, "-9.41% (n=3+4, untested)") || !strings.Contains(text, "the changes are untested: 3 runs against 4 cannot give a p-value below 0.057, above α=0.05") {
		t.Errorf("3 against 4:\n%s", text)
	}
	enough := experiment.Compare(side("a", 100, 101, 102), side("b", 90, 91, 92, 93, 94))
	fs, _ = enough.Check([]experiment.Rule{rule})
	if len(fs) != 1 || FailureText(fs[0]) != "throughput changed -8.9% (p=0.036), beyond throughput -5%" {
		t.Errorf("3 against 5: %+v", fs)
	}
}

// TestRSquaredInWords: the recommendation gives R² as it is (0.9964, not
// 1.00), and a fit whose R² is undefined says so, never NaN.
func TestRSquaredInWords(t *testing.T) {
	v := &experiment.Verdict{Sweeps: []experiment.SweepVerdict{{
		Param: "workers", X: []float64{1, 2, 3, 4, 5}, Throughput: []float64{1, 2, 3, 4, 5}, P95: []float64{1, 1, 1, 1, 1}, Pick: 4, Best: 4,
		USL:      &experiment.USL{Sigma: 0.2, Kappa: 0.02, Lambda: 50, HasPeak: true, PeakN: 5.7, PeakX: 130, R2: 0.9964},
		Evidence: []experiment.Evidence{{Kind: experiment.BestThroughput, At: 5, Value: 5}, {Kind: experiment.USLPeak, At: 5.7, Value: 130, Extrapolated: true}},
	}}}
	d := Describe(v)
	if !strings.Contains(d.Recommendation, "R²=0.9964, outside the measured range)") || !strings.Contains(d.Sweeps[0].USL.Text, "R²=0.9964:") {
		t.Errorf("recommendation %q, USL %q", d.Recommendation, d.Sweeps[0].USL.Text)
	}
	if v.Recommendation != "" || v.Sweeps[0].USL.Text != "" {
		t.Error("Describe wrote into the verdict it was given")
	}
	v.Sweeps[0].USL.R2, v.Sweeps[0].USL.R2Undefined = 0, true
	v.Sweeps[0].Evidence = v.Sweeps[0].Evidence[:1]
	d = Describe(v)
	if text := d.Sweeps[0].USL.Text; !strings.Contains(text, "R² undefined (every throughput equal)") || strings.Contains(text, "NaN") {
		t.Errorf("undefined R²: %q", text)
	}
	if _, err := json.Marshal(d); err != nil {
		t.Error(err)
	}
}

// TestNoBenchmathWordsInReports: the experiment fixture's reports state
// what its 2 runs a point allow in one sentence, not in benchmath's words.
func TestNoBenchmathWordsInReports(t *testing.T) {
	o := fixtureExperiment(t)
	for name, f := range map[string]func(io.Writer) error{
		"text": func(w io.Writer) error { return Verdict(w, o) },
		"md":   func(w io.Writer) error { return ExperimentMarkdown(w, "", o) },
		"html": func(w io.Writer) error { return ExperimentHTML(w, o) },
	} {
		out := render(t, f)
		if bytes.Contains(out, []byte("need >=")) || bytes.Contains(out, []byte("need &gt;=")) || bytes.Contains(out, []byte("samples to detect")) {
			t.Errorf("%s has benchmath's words", name)
		}
		if !bytes.Contains(out, []byte("with 2 runs a point, each cell shows the median and the lowest and highest run")) {
			t.Errorf("%s does not say what 2 runs a point allow", name)
		}
	}
}

// TestUntrustedRecommendation: when a quarter of the runs or more were
// measured on a busy machine (or by a saturated or late loadlab), the
// recommendation says first that it is not trusted yet, with the counts;
// one tainted run in ten does not.
func TestUntrustedRecommendation(t *testing.T) {
	sweep := experiment.SweepVerdict{
		Param: "workers", X: []float64{1, 2, 3, 4, 5}, Throughput: []float64{1, 2, 3, 4, 5}, P95: []float64{1, 1, 1, 1, 1}, Pick: 4, Best: 4,
		Evidence: []experiment.Evidence{{Kind: experiment.BestThroughput, At: 5, Value: 5}},
	}
	v := &experiment.Verdict{Sweeps: []experiment.SweepVerdict{sweep},
		Suspect: &experiment.Suspect{Runs: 25, Of: 25, Codes: map[string]int{"machine_busy": 25, "late": 2}}}
	lines := strings.Split(Describe(v).Recommendation, "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[0], "NOT TRUSTED YET: 25 of 25 runs") ||
		!strings.Contains(lines[0], "machine_busy in 25, late in 2") || !strings.HasPrefix(lines[1], "workers=5: the best throughput") {
		t.Errorf("recommendation %q", lines)
	}
	v.Suspect = &experiment.Suspect{Runs: 1, Of: 10, Codes: map[string]int{"cpu_steal": 1}}
	if rec := Describe(v).Recommendation; strings.Contains(rec, "NOT TRUSTED") {
		t.Errorf("one suspect run in ten: %q", rec)
	}
}

// TestTrustedAlthoughLate: a memory verdict whose runs were late by under
// 100 ms at the p99, and had CPU stolen, is trusted and says why.
func TestTrustedAlthoughLate(t *testing.T) {
	t.Parallel()
	v := &experiment.Verdict{
		Figures: []experiment.FigureTable{{ID: experiment.FigurePSSPeak, Name: "PSS peak"}},
		Suspect: &experiment.Suspect{Runs: 4, Of: 4, Codes: map[string]int{"cpu_steal": 3, "late": 4}},
		Trust: &experiment.Trust{RestsOn: []experiment.FigureID{experiment.FigurePSSPeak}, Of: 4,
			Unmoved: map[string]int{"cpu_steal": 3, "late": 4}},
	}
	got := trustLine(v)
	want := "trusted for PSS peak, although 4 of 4 runs were measured on a busy machine (cpu_steal in 3, late in 4): cpu_steal and late (under 100 ms at the p99) move time figures, not memory, which the verdict rests on (see validity below)."
	if got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
}

// TestWaitedRoundsText: the rounds left out for servers that waited
// unlike are said in one phrase, with the widest gap, after the rounds not
// done.
func TestWaitedRoundsText(t *testing.T) {
	t.Parallel()
	p := &experiment.Pairing{Analysis: experiment.Paired, Why: experiment.PairedRounds, Rounds: []int{1, 3, 6, 7, 8, 13, 14, 16}, Need: 6,
		Left: []experiment.RoundLeft{
			{Round: 2, Why: experiment.WaitedRound, Points: []string{"side=B", "side=A"}, WaitPct: []float64{22, 0}, UsualPct: []float64{4, 4.5}},
			{Round: 4, Points: []string{"side=B"}},
			{Round: 9, Why: experiment.WaitedRound, Points: []string{"side=A", "side=B"}, WaitPct: []float64{68, 9}, UsualPct: []float64{4.5, 4}},
		}}
	got := analysisLine(p)
	want := "paired analysis: each point against its reference within each of 8 rounds (Wilcoxon signed-rank test of the per-round ratios, Hodges–Lehmann median ratio); left out: round 4 (side=B not done); rounds 2 and 9 (their runs' servers waited for a CPU unlike, by 10 points or more beyond each point's usual wait, up to side=A 68% (usually 4%) against side=B 9% (usually 4%): a neighbour took one run's CPU, not the other's)"
	if got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
}
