package capacity

import (
	"errors"
	"fmt"
	"strings"

	"github.com/loadlab/loadlab/internal/threshold"
)

// ParseSLO reads a service-level objective: threshold clauses separated by
// commas, 'p95(latency) < 300ms, error_rate < 1%'. A comma inside
// parentheses or a quoted word belongs to its clause ('p99(latency,
// step=login) < 1s'). Errors are *threshold.SyntaxError with the column
// counted in the whole text.
func ParseSLO(text string) ([]*threshold.Threshold, error) {
	var out []*threshold.Threshold
	for _, c := range splitClauses(text) {
		clause := strings.TrimSpace(c.text)
		if clause == "" {
			return nil, &threshold.SyntaxError{Col: c.col, Msg: "expected a clause such as p95(latency) < 300ms, found nothing"}
		}
		lead := len([]rune(c.text)) - len([]rune(strings.TrimLeft(c.text, " \t")))
		t, err := threshold.Parse(clause)
		if err != nil {
			var se *threshold.SyntaxError
			if errors.As(err, &se) {
				return nil, &threshold.SyntaxError{Col: c.col + lead + se.Col - 1, Msg: se.Msg}
			}
			return nil, fmt.Errorf("clause %q: %w", clause, err)
		}
		out = append(out, t)
	}
	return out, nil
}

type clause struct {
	text string
	col  int // 1-based column of text's first character in the whole SLO
}

// splitClauses cuts text at the commas outside parentheses and quotes.
func splitClauses(text string) []clause {
	var out []clause
	runes := []rune(text)
	depth, quoted, start := 0, false, 0
	for i := 0; i < len(runes); i++ {
		switch r := runes[i]; {
		case quoted && r == '\\':
			i++
		case r == '"':
			quoted = !quoted
		case quoted:
		case r == '(':
			depth++
		case r == ')':
			depth = max(depth-1, 0)
		case r == ',' && depth == 0:
			out = append(out, clause{string(runes[start:i]), start + 1})
			start = i + 1
		}
	}
	return append(out, clause{string(runes[start:]), start + 1})
}
