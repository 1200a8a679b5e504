package report

import (
	"encoding/xml"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/loadlab/loadlab/internal/chart"
	"github.com/loadlab/loadlab/internal/experiment"
	"github.com/loadlab/loadlab/internal/result"
)

// The CI outputs: a GitHub job summary, whose charts must be Mermaid (a job
// summary shows no local PNG), and JUnit XML, which every CI system reads.

// mermaidPoints is the most points a Mermaid chart gets: a job summary is
// capped at 1 MiB, and a line of 60 points reads as well as one of 600.
const mermaidPoints = 60

// mermaid renders c as a Mermaid xychart-beta block. xychart-beta has no
// legend and no bands, so the series' names go in the title and the spread
// is left out; a series longer than mermaidPoints is thinned to evenly
// spaced points. Series whose X differ from the first one's are left out.
func mermaid(c *chart.Chart) string {
	if c == nil || len(c.Series) == 0 || len(c.Series[0].X) < 2 {
		return ""
	}
	first := c.Series[0]
	keep := indexes(len(first.X))
	var names []string
	var lines []string
	scale, unit := mermaidUnit(c.YUnit)
	for _, s := range c.Series {
		if len(s.X) != len(first.X) {
			continue
		}
		names = append(names, s.Name)
		var ys []string
		for _, i := range keep {
			ys = append(ys, strconv.FormatFloat(s.Y[i]*scale, 'g', 4, 64))
		}
		lines = append(lines, "    line ["+strings.Join(ys, ", ")+"]")
	}
	var xs []string
	for _, i := range keep {
		label := strconv.FormatFloat(first.X[i], 'g', 4, 64)
		if c.XLabels != nil && int(first.X[i]) < len(c.XLabels) {
			label = c.XLabels[int(first.X[i])]
		}
		xs = append(xs, strconv.Quote(mermaidText(label)))
	}
	title := c.Title
	if len(names) > 1 {
		title += " (" + strings.Join(names, ", ") + ")"
	}
	ylabel := c.YLabel
	if unit != "" {
		ylabel += " (" + unit + ")"
	}
	return fmt.Sprintf("```mermaid\nxychart-beta\n    title \"%s\"\n    x-axis \"%s\" [%s]\n    y-axis \"%s\"\n%s\n```\n",
		mermaidText(title), mermaidText(c.XLabel), strings.Join(xs, ", "), mermaidText(ylabel), strings.Join(lines, "\n"))
}

// indexes are the points of a series of n a Mermaid chart shows.
func indexes(n int) []int {
	if n <= mermaidPoints {
		out := make([]int, n)
		for i := range out {
			out[i] = i
		}
		return out
	}
	out := make([]int, mermaidPoints)
	for i := range out {
		out[i] = i * (n - 1) / (mermaidPoints - 1)
	}
	return out
}

// mermaidUnit is the scale and unit label of a chart's Y values in Mermaid,
// which prints bare numbers.
func mermaidUnit(u chart.Unit) (float64, string) {
	switch u {
	case chart.Bytes:
		return 1.0 / mib, "MiB"
	case chart.Milliseconds:
		return 1, "ms"
	case chart.Seconds:
		return 1, "s"
	}
	return 1, ""
}

// StepSummary writes a run's report for a GitHub job summary
// ($GITHUB_STEP_SUMMARY): the markdown report, with Mermaid charts instead
// of PNG files.
func StepSummary(w io.Writer, r *result.Result) error {
	if err := MarkdownFrom(w, "", "", r); err != nil {
		return err
	}
	return mermaidCharts(w, runFigures(r))
}

// ExperimentStepSummary is StepSummary for an experiment.
func ExperimentStepSummary(w io.Writer, o *experiment.Outcome) error {
	if err := ExperimentMarkdownFrom(w, "", "", o); err != nil {
		return err
	}
	return mermaidCharts(w, sweepFigures(o))
}

func mermaidCharts(w io.Writer, fs []figure) error {
	ew := &errWriter{w: w}
	ew.printf("\n")
	for _, f := range fs {
		if m := mermaid(f.Chart); m != "" {
			ew.printf("%s\n", m)
		}
	}
	return ew.err
}

// JUnit XML, as Jenkins, GitLab and GitHub's test reporters read it.
type junitSuites struct {
	XMLName  xml.Name     `xml:"testsuites"`
	Name     string       `xml:"name,attr"`
	Tests    int          `xml:"tests,attr"`
	Failures int          `xml:"failures,attr"`
	Suites   []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name      string      `xml:"name,attr"`
	Tests     int         `xml:"tests,attr"`
	Failures  int         `xml:"failures,attr"`
	Time      string      `xml:"time,attr"`
	Timestamp string      `xml:"timestamp,attr,omitempty"`
	Cases     []junitCase `xml:"testcase"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	Time      string        `xml:"time,attr"`
	Failure   *junitFailure `xml:"failure,omitempty"`
	Output    string        `xml:"system-out,omitempty"`
}

type junitFailure struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr"`
	Text    string `xml:",chardata"`
}

// junitRun is a run's test suite: a test case per threshold (measured
// against wanted) and one per step with checks (how many failed, and the
// first failure).
func junitRun(name string, r *result.Result) junitSuite {
	s := junitSuite{Name: name, Time: strconv.FormatFloat(r.Summary.DurationS, 'f', 3, 64)}
	if !r.Started.IsZero() {
		s.Timestamp = r.Started.UTC().Format("2006-01-02T15:04:05")
	}
	for _, t := range r.Thresholds {
		c := junitCase{Name: "threshold " + t.Text, Classname: name + ".thresholds", Time: "0", Output: t.Detail}
		if !t.Pass {
			c.Failure = &junitFailure{Message: t.Text + " failed: " + t.Detail, Type: "threshold", Text: t.Detail}
		}
		s.Cases = append(s.Cases, c)
	}
	for _, st := range r.Steps {
		ch := st.Summary.Checks
		if ch.Passed+ch.Failed == 0 {
			continue
		}
		detail := fmt.Sprintf("%d of %d checks passed", ch.Passed, ch.Passed+ch.Failed)
		c := junitCase{Name: "checks of " + stepName(st), Classname: name + ".checks", Time: "0", Output: detail}
		if ch.Failed > 0 {
			text := detail
			if f := st.FailedCheck; f != nil {
				text += "\nfirst failed: " + f.Check + "; " + failedAnswer(f, 512)
			}
			c.Failure = &junitFailure{Message: fmt.Sprintf("%d of %d checks failed", ch.Failed, ch.Passed+ch.Failed), Type: "check", Text: text}
		}
		s.Cases = append(s.Cases, c)
	}
	for _, c := range s.Cases {
		s.Tests++
		if c.Failure != nil {
			s.Failures++
		}
	}
	return s
}

func writeJUnit(w io.Writer, name string, suites []junitSuite) error {
	all := junitSuites{Name: name, Suites: suites}
	for _, s := range suites {
		all.Tests += s.Tests
		all.Failures += s.Failures
	}
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(all); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n")
	return err
}

// JUnit writes a run as JUnit XML: one test case per threshold and per
// step's checks, a failure with what was measured against what was wanted.
func JUnit(w io.Writer, r *result.Result) error {
	return writeJUnit(w, "loadlab", []junitSuite{junitRun(r.Name, r)})
}

// ExperimentJUnit writes an experiment as JUnit XML: a test suite per run
// ("NAME run 3 (threads=4)") and a test case for each run that failed.
func ExperimentJUnit(w io.Writer, o *experiment.Outcome) error {
	results := o.Results()
	var suites []junitSuite
	for _, r := range o.Runs {
		name := fmt.Sprintf("%s run %d (%s)", o.Name, r.Index, r.Point)
		i := r.Index - 1
		var s junitSuite
		if i >= 0 && i < len(results) && results[i] != nil {
			s = junitRun(name, results[i])
		} else {
			s = junitSuite{Name: name, Time: "0"}
		}
		if r.Status != "done" {
			c := junitCase{Name: "run", Classname: name, Time: "0"}
			if r.Status == "failed" {
				c.Failure = &junitFailure{Message: "the run failed: " + firstLine(r.Error), Type: "run", Text: r.Error}
				s.Failures++
			} else {
				c.Output = "not run: " + r.Status
			}
			s.Cases = append(s.Cases, c)
			s.Tests++
		}
		suites = append(suites, s)
	}
	return writeJUnit(w, "loadlab", suites)
}
