package capacity

import (
	"fmt"
	"io"
	"strings"
)

// File is the search's record in its directory; MarkdownFile its report
// (with report.html, written by internal/report).
const (
	File         = "capacity.json"
	MarkdownFile = "report.md"
)

// Image is a chart linked from the markdown report.
type Image struct {
	Name, Path string
}

// WriteMarkdown writes the search as markdown: the answer, what broke
// first, the ranking of the plan's steps, the images (charts drawn by
// internal/report), and every step as a table row (offered rate against
// throughput and latency, the plateau of an overloaded server in numbers).
func (d *Document) WriteMarkdown(w io.Writer, images ...Image) error {
	var b strings.Builder
	fmt.Fprintf(&b, "# Capacity: %s\n\n", md(d.Name))
	fmt.Fprintf(&b, "SLO: %s\n\n", md(strings.Join(d.SLO, ", ")))
	c := d.Capacity
	switch {
	case c == nil:
		fmt.Fprintf(&b, "**No answer yet**: %d steps done.\n\n", len(d.Steps))
	case d.answer() == 0:
		b.WriteString("**Capacity: none found.**\n\n")
	case c.AtLeast:
		fmt.Fprintf(&b, "**Capacity: at least %s.**\n\n", d.Unit(d.answer()))
	default:
		fmt.Fprintf(&b, "**Capacity: %s**", d.Unit(d.answer()))
		if c.CI != nil {
			fmt.Fprintf(&b, " (%s; %s broke)", c.confirmWords(), d.Unit(c.CI.Hi))
		}
		b.WriteString(".\n\n")
		if d.Search.By == "vus" && c.Throughput != nil {
			fmt.Fprintf(&b, "- throughput at the answer: %.4g/s\n", c.Throughput.Median)
		}
	}
	if l := d.Limit; l != nil {
		fmt.Fprintf(&b, "- limit: %s at %s (step %d)\n", md(l.Clause), l.Level(), l.Index)
		for _, c := range l.ClauseWords() {
			fmt.Fprintf(&b, "- clause %s\n", md(c))
		}
	}
	if d.Bottleneck != "" {
		fmt.Fprintf(&b, "- bottleneck: %s\n", md(d.Bottleneck))
	}
	if d.Note != "" {
		fmt.Fprintf(&b, "- note: %s\n", md(d.Note))
	}
	if len(d.Ranking) > 0 {
		b.WriteString("\n| step | p95 at the answer (ms) | p95 above (ms) | growth |\n| --- | ---: | ---: | ---: |\n")
		for _, r := range d.Ranking {
			fmt.Fprintf(&b, "| %s | %.4g | %.4g | %.3g× |\n", md(r.Step), r.P95AtMs, r.P95Above, r.Growth)
		}
	}
	if len(images) > 0 {
		b.WriteString("\n")
	}
	for _, im := range images {
		fmt.Fprintf(&b, "![%s](%s)\n", md(im.Name), strings.NewReplacer("(", "%28", ")", "%29", " ", "%20").Replace(im.Path))
	}
	level := "rate (/s)"
	if d.Search.By == "vus" {
		level = "VUs"
	}
	b.WriteString("\n| step | phase | " + level + " | throughput (/s) | p50 (ms) | p95 (ms) | p99 (ms) | errors | in flight | server CPU (of a core) | verdict |\n")
	b.WriteString("| ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |\n")
	for _, r := range d.Steps {
		verdict := "holds"
		if !r.Holds {
			verdict = "breaks: " + r.Clause
		}
		if r.Stop != "" {
			verdict += " [" + string(r.Stop) + "]"
		}
		cpu := ""
		if r.ServerCPUPct > 0 {
			cpu = fmt.Sprintf("%.0f%%", r.ServerCPUPct)
		}
		fmt.Fprintf(&b, "| %d | %s | %.4g | %.4g | %.4g | %.4g | %.4g | %.2f%% | %.1f | %s | %s |\n",
			r.Index, r.Phase, r.level(), r.Throughput, r.P50, r.P95, r.P99, 100*r.ErrorRate, r.InFlight, cpu, md(verdict))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// md keeps text from breaking a markdown table or starting markup.
var md = strings.NewReplacer("|", `\|`, "\n", " ", "<", "&lt;", ">", "&gt;", "*", `\*`, "_", `\_`, "`", "\\`").Replace
