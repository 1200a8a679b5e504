package report

import "github.com/loadlab/loadlab/internal/experiment"

// boxLines are a box verdict's words after its lines of each box, which
// markdown and HTML show as a table instead.
func boxLines(b *experiment.BoxVerdict) []string {
	if b == nil || len(b.Text) < len(b.Boxes) {
		return nil
	}
	return b.Text[len(b.Boxes):]
}
