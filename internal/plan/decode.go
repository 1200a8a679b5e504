package plan

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/loadlab/loadlab/internal/quantity"
	"github.com/loadlab/loadlab/internal/suggest"
	"github.com/loadlab/loadlab/internal/threshold"
)

// decoder turns nodes into typed values, collecting every error.
type decoder struct {
	errs Errors
	// misspelt are the known keys that an unknown key was taken for
	// ("stepz" for steps): a missing-key error about them would only repeat
	// the unknown key's.
	misspelt map[string]bool
	// unread are the data sources that could not be read, already an
	// error: templates that use them are not reported again as undefined.
	unread map[string]bool
}

func (d *decoder) errorf(pos Pos, format string, args ...any) {
	d.errs = append(d.errs, &Error{Pos: pos, Msg: fmt.Sprintf(format, clipArgs(format, args)...)})
}

// fields checks that n is a mapping whose keys are all known, and returns it.
func (d *decoder) fields(n *node, what string, known ...string) (*node, bool) {
	if n == nil {
		return nil, false
	}
	if n.kind != kindMap {
		d.errorf(n.pos, "%s must be a mapping, got %s", what, describe(n))
		return nil, false
	}
	set := map[string]bool{}
	for _, k := range known {
		set[k] = true
	}
	for _, k := range n.keys {
		if !set[k.value] {
			d.errorf(k.pos, "unknown key %q in %s%s (known keys: %s)", k.value, what, didYouMean(k.value, known), strings.Join(known, ", "))
			if best := suggest.Closest(k.value, known); best != "" {
				if d.misspelt == nil {
					d.misspelt = map[string]bool{}
				}
				d.misspelt[best] = true
			}
		}
	}
	return n, true
}

func describe(n *node) string {
	switch n.kind {
	case kindScalar:
		return fmt.Sprintf("%q", n.value)
	}
	return n.kind.String()
}

func (d *decoder) scalar(n *node, what string) (string, bool) {
	if n == nil {
		return "", false
	}
	if n.kind != kindScalar {
		d.errorf(n.pos, "%s must be a value, got %s", what, n.kind)
		return "", false
	}
	return n.value, true
}

func (d *decoder) str(n *node, what string) (string, bool) {
	s, ok := d.scalar(n, what)
	if ok && s == "" {
		d.errorf(n.pos, "%s must not be empty", what)
		return "", false
	}
	return s, ok
}

func (d *decoder) integer(n *node, what string, lo int64) (int64, bool) {
	s, ok := d.scalar(n, what)
	if !ok {
		return 0, false
	}
	v, err := strconv.ParseInt(strings.ReplaceAll(s, "_", ""), 10, 64)
	if err != nil || n.quoted {
		d.errorf(n.pos, "%s must be a whole number, got %q", what, s)
		return 0, false
	}
	if v < lo {
		d.errorf(n.pos, "%s must be at least %d, got %d", what, lo, v)
		return 0, false
	}
	return v, true
}

func (d *decoder) boolean(n *node, what string) (bool, bool) {
	s, ok := d.scalar(n, what)
	if !ok {
		return false, false
	}
	switch strings.ToLower(s) {
	case "true", "yes", "on":
		return true, true
	case "false", "no", "off":
		return false, true
	}
	d.errorf(n.pos, "%s must be true or false, got %q", what, s)
	return false, false
}

// durationOrNone reads a duration that may be 0: none (warmup: 0s).
func (d *decoder) durationOrNone(n *node, what string) (time.Duration, bool) {
	if n != nil && n.kind == kindScalar {
		if v, err := time.ParseDuration(strings.ReplaceAll(n.value, " ", "")); err == nil && v == 0 || n.value == "0" {
			return 0, true
		}
	}
	return d.duration(n, what)
}

func (d *decoder) duration(n *node, what string) (time.Duration, bool) {
	s, ok := d.scalar(n, what)
	if !ok {
		return 0, false
	}
	v, err := time.ParseDuration(strings.ReplaceAll(s, " ", ""))
	if err != nil {
		d.errorf(n.pos, "%s must be a duration such as 500ms, 30s, 5m or 1h30m, got %q", what, s)
		return 0, false
	}
	if v <= 0 {
		d.errorf(n.pos, "%s must be positive, got %q", what, s)
		return 0, false
	}
	return v, true
}

func (d *decoder) rate(n *node, what string, allowZero bool) (quantity.Rate, bool) {
	s, ok := d.scalar(n, what)
	if !ok {
		return quantity.Rate{}, false
	}
	var r quantity.Rate
	var err error
	if allowZero {
		r, err = quantity.ParseRateAllowZero(s)
	} else {
		r, err = quantity.ParseRate(s)
	}
	if err != nil {
		d.errorf(n.pos, "%s: %v", what, err)
		return quantity.Rate{}, false
	}
	return r, true
}

func (d *decoder) size(n *node, what string) (int64, bool) {
	s, ok := d.scalar(n, what)
	if !ok {
		return 0, false
	}
	v, err := quantity.ParseBytes(s)
	if err != nil {
		d.errorf(n.pos, "%s: %v", what, err)
		return 0, false
	}
	return v, true
}

// value reads a scalar as the YAML type it was written as.
func value(n *node) any {
	if n.quoted {
		return n.value
	}
	switch strings.ToLower(n.value) {
	case "true", "yes", "on":
		return true
	case "false", "no", "off":
		return false
	}
	if i, err := strconv.ParseInt(n.value, 10, 64); err == nil {
		if i >= math.MinInt && i <= math.MaxInt {
			return int(i)
		}
	}
	if f, err := strconv.ParseFloat(n.value, 64); err == nil && !strings.ContainsAny(n.value, "xX") {
		return f
	}
	return n.value
}

// text reads a template string.
func (d *decoder) text(n *node, what string) (Text, bool) {
	s, ok := d.scalar(n, what)
	if !ok {
		return Text{}, false
	}
	return Text{Src: s, Pos: n.pos, quoted: n.quoted, written: n.written}, true
}

// textAny reads a template from any scalar: numbers and booleans as written.
func (d *decoder) fieldsOf(n *node, what string) []Field {
	if n == nil {
		return nil
	}
	if n.kind != kindMap {
		d.errorf(n.pos, "%s must be a mapping of names to values, got %s", what, describe(n))
		return nil
	}
	var out []Field
	for i, k := range n.keys {
		v, ok := d.text(n.vals[i], fmt.Sprintf("%s %q", what, k.value))
		if !ok {
			continue
		}
		out = append(out, Field{Name: k.value, Value: v, Pos: k.pos})
	}
	return out
}

// parseThreshold parses a threshold, placing a syntax error at its column.
func (d *decoder) parseThreshold(t *Threshold) {
	parsed, err := threshold.Parse(t.Text)
	if err != nil {
		var se *threshold.SyntaxError
		if errors.As(err, &se) {
			d.errorf(t.Pos.Shift(se.Col-1), "threshold %q: %s", t.Text, se.Msg)
			return
		}
		d.errorf(t.Pos, "threshold %q: %v", t.Text, err)
		return
	}
	t.T = parsed
}

// format writes a scalar value back as text.
func format(v any) string {
	switch v := v.(type) {
	case string:
		return v
	case nil:
		return ""
	}
	return fmt.Sprint(v)
}
