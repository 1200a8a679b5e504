package plan

import (
	"strings"
)

// Masked is the plan's source with the values of secret variables replaced
// by ***, fit to store beside results and to show in reports.
func (p *Plan) Masked() string {
	lines := strings.Split(string(p.Source), "\n")
	for _, v := range p.Vars {
		if !v.Secret || v.valueText == "" || v.valuePos.Line < 1 || v.valuePos.Line > len(lines) {
			continue
		}
		line := lines[v.valuePos.Line-1]
		from := min(max(v.valuePos.Col-1, 0), len(line))
		if i := strings.Index(line[from:], v.valueText); i >= 0 {
			lines[v.valuePos.Line-1] = line[:from+i] + "***" + line[from+i+len(v.valueText):]
		} else {
			// A value written over several lines: mask the rest of the line.
			lines[v.valuePos.Line-1] = line[:from] + "***"
		}
	}
	return strings.Join(lines, "\n")
}

// Secrets lists the values that must never be shown: secret variables and
// secret data columns. Reports use it to mask what they print.
func (p *Plan) Secrets() []string {
	var out []string
	for _, v := range p.Vars {
		if v.Secret {
			if s := format(v.Value); s != "" {
				out = append(out, s)
			}
		}
	}
	for _, f := range p.Data {
		for i, c := range f.Columns {
			if !f.Secret[c] {
				continue
			}
			for _, row := range f.Rows {
				if i < len(row) && row[i] != "" {
					out = append(out, row[i])
				}
			}
		}
	}
	return out
}
