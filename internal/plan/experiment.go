package plan

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

var experimentKeys = []string{"params", "vary", "baseline", "repeat", "max_repeat", "min_effect", "warmup", "cooldown", "seed", "knee", "compare", "target_rate"}

// experiment reads params, vary, baseline, repeat, warmup, cooldown, seed, knee, compare and target_rate.
func (d *decoder) experiment(p *Plan, top *node) {
	var first *node
	for _, k := range experimentKeys {
		if n := top.get(k); n != nil && first == nil {
			first = n
		}
	}
	if first == nil {
		return
	}
	e := &Experiment{Pos: first.pos, Vary: OneAtATime, Repeat: DefaultRepeat, Baseline: map[string]int{}}
	setValues := map[string]string{} // param: the --set that gave its values
	if n := top.get("params"); n != nil {
		if n.kind != kindMap {
			d.errorf(n.pos, "params must map each parameter to its values: a list, a range such as 1..10 or 1..64 x2, or named values {name: value}")
		} else {
			for i, k := range n.keys {
				if !d.name(k, "param") {
					continue
				}
				for _, v := range p.Vars {
					if v.Name == k.value {
						d.errorf(k.pos, "param %s is also a plan variable; give it one name or the other", k.value)
					}
				}
				if prm, ok := d.param(k, n.vals[i]); ok {
					e.Params = append(e.Params, prm)
				}
				if src := n.vals[i].pos.Source; src != "" {
					setValues[k.value] = src
				}
			}
		}
	}
	if n := top.get("vary"); n != nil {
		if s, ok := d.str(n, "vary"); ok {
			switch Vary(s) {
			case OneAtATime, Matrix:
				e.Vary = Vary(s)
			default:
				d.errorf(n.pos, "vary must be one-at-a-time or matrix, got %q%s", s, didYouMean(s, []string{"one-at-a-time", "matrix"}))
			}
		}
	}
	for _, prm := range e.Params {
		e.Baseline[prm.Name] = 0
	}
	var named []string // the params the baseline names
	if n := top.get("baseline"); n != nil {
		if n.kind != kindMap {
			d.errorf(n.pos, "baseline must map params to one of their values, such as {threads: 5}")
		}
		for i, k := range n.keys {
			var prm *Param
			for j := range e.Params {
				if e.Params[j].Name == k.value {
					prm = &e.Params[j]
				}
			}
			if prm == nil {
				d.errorf(k.pos, "baseline names %q, which is not a param", k.value)
				continue
			}
			want, _ := d.scalar(n.vals[i], "baseline value")
			found := -1
			var labels []string
			for j, v := range prm.Values {
				labels = append(labels, v.Label)
				if v.Label == want || format(v.Value) == want {
					found = j
					break
				}
			}
			if found < 0 && setValues[k.value] != "" && n.vals[i].pos.Source == "" && len(prm.Values) > 0 {
				// --set gave the param other values than the file's, and
				// the file's baseline is not among them: the first is.
				p.Notices = append(p.Notices, fmt.Sprintf("%s: the baseline %s=%s (%s) is not among these values (%s): the first, %s, is the baseline",
					setValues[k.value], k.value, want, n.vals[i].pos, strings.Join(labels, ", "), prm.Values[0].Label))
				found = 0
			}
			if found < 0 {
				d.errorf(n.vals[i].pos, "baseline %s=%s is not one of its values (%s)", k.value, want, strings.Join(labels, ", "))
				continue
			}
			e.Baseline[k.value] = found
			named = append(named, k.value)
		}
	}
	d.factor(e, top.get("compare"), top.get("vary"), named)
	if n := top.get("repeat"); n != nil {
		if _, err := strconv.ParseInt(n.value, 10, 64); n.kind == kindScalar && n.value != "auto" && err != nil && !strings.Contains(n.value, "{{") {
			d.errorf(n.pos, "repeat must be a whole number of rounds, or auto (rounds until the change is decided, at most max_repeat), got %q", n.value)
		} else if n.kind == kindScalar && n.value == "auto" {
			e.Auto, e.Repeat = true, DefaultMaxRepeat
		} else if v, ok := d.integer(n, "repeat", 1); ok && d.atMost(n, "repeat", v, MaxRepeat) {
			e.Repeat = int(v)
		}
	}
	for _, key := range []string{"max_repeat", "min_effect"} {
		if n := top.get(key); n != nil && !e.Auto {
			d.errorf(n.pos, "%s is for repeat: auto, and the plan's repeat is a number (or absent): remove %s, or set repeat: auto", key, key)
		}
	}
	if n := top.get("max_repeat"); n != nil && e.Auto {
		if v, ok := d.integer(n, "max_repeat", MinAutoRepeat); ok && d.atMost(n, "max_repeat", v, MaxRepeat) {
			e.Repeat = int(v)
		}
	}
	if n := top.get("min_effect"); n != nil && e.Auto {
		e.MinEffect = d.minEffect(n)
	}
	if n := top.get("warmup"); n != nil {
		e.Warmup, _ = d.durationOrNone(n, "warmup")
		e.WarmupPos = n.pos
	}
	if n := top.get("cooldown"); n != nil {
		e.Cooldown, _ = d.durationOrNone(n, "cooldown")
	}
	if n := top.get("seed"); n != nil {
		if v, ok := d.integer(n, "seed", 1); ok {
			e.Seed = uint64(v)
		}
	}
	if n := top.get("knee"); n != nil {
		e.KneeShare = d.kneeShare(n)
	}
	if n := top.get("target_rate"); n != nil {
		d.readTargetRate(e, n)
	}
	d.checkPoints(e, top)
	p.Experiment = e
}

// factor reads compare: the param a matrix studies, compared at each
// combination of the others (its conditions). Without it, a matrix studies
// the only param the baseline names; when the baseline names none or
// several, the matrix is refused at its vary: with the params listed: a
// guess recommended "per_vu=10" on a Thin-vs-Puma matrix, as if a request
// count were a knob.
func (d *decoder) factor(e *Experiment, n, vary *node, named []string) {
	var names []string
	for _, prm := range e.Params {
		names = append(names, prm.Name)
	}
	if n != nil {
		s, ok := d.str(n, "compare")
		switch {
		case !ok:
		case !slices.Contains(names, s):
			d.errorf(n.pos, "compare names %q, which is not a param (params: %s)%s", s, strings.Join(names, ", "), didYouMean(s, names))
		case e.Vary != Matrix && len(e.Params) > 1:
			d.errorf(n.pos, "compare names the param a matrix studies at each combination of the others; add vary: matrix, or leave compare out: one at a time, each param is compared with the baseline")
		default:
			e.Compare, e.CompareWhy = s, CompareNamed
		}
		return
	}
	if e.Vary != Matrix || len(e.Params) < 2 {
		return
	}
	if len(named) == 1 {
		e.Compare, e.CompareWhy = named[0], CompareBaseline
		return
	}
	pos := e.Pos
	if vary != nil {
		pos = vary.pos
	}
	d.errorf(pos, "a matrix of %d params needs to know which one it studies: add compare: PARAM (one of %s), the param compared at each combination of the others, or a baseline: that names that one param alone", len(names), strings.Join(names, ", "))
}

// kneeShare reads knee: the share of throughput a step of a sweep must add
// to count as a gain ("5%"); the knee is the smallest level after which no
// step does.
func (d *decoder) kneeShare(n *node) float64 {
	s, ok := d.str(n, "knee")
	if !ok {
		return 0
	}
	num, isPercent := strings.CutSuffix(strings.TrimSpace(s), "%")
	v, err := strconv.ParseFloat(strings.TrimSpace(num), 64)
	if !isPercent || err != nil || !(v > 0 && v < 100) {
		d.errorf(n.pos, "knee must be a share of throughput above 0%% and below 100%%, such as 5%%, got %q", s)
		return 0
	}
	return v / 100
}

// minEffect reads min_effect: the change of the primary figure below which
// repeat: auto calls two points the same ("2%").
func (d *decoder) minEffect(n *node) float64 {
	s, ok := d.str(n, "min_effect")
	if !ok {
		return 0
	}
	num, isPercent := strings.CutSuffix(strings.TrimSpace(s), "%")
	v, err := strconv.ParseFloat(strings.TrimSpace(num), 64)
	if !isPercent || err != nil || !(v > 0 && v < 100) {
		d.errorf(n.pos, "min_effect must be a change above 0%% and below 100%%, such as 2%%, got %q", s)
		return 0
	}
	return v / 100
}

// DefaultMaxRepeat is the most rounds repeat: auto runs when the plan has
// no max_repeat; MinAutoRepeat the fewest max_repeat may be, the rounds a
// paired test needs to reach p <= 0.05 at all.
const (
	DefaultMaxRepeat = 20
	MinAutoRepeat    = 6
)

// checkWarmup refuses a warmup that leaves nothing to measure: the warmup
// is the first part of the load's duration, not added to it.
func (d *decoder) checkWarmup(p *Plan) {
	e := p.Experiment
	if e == nil || e.Warmup <= 0 {
		return
	}
	switch total := p.LoadLength(); {
	case total == 0 && (p.Load.Iterations > 0 || p.PerScenario()):
		d.errorf(e.WarmupPos, "warmup needs a load that lasts a known time (duration:, stages or open), not a count of iterations: the warmup could hold every request, or none")
	case total > 0 && e.Warmup >= total:
		d.errorf(e.WarmupPos, "warmup %v must be shorter than the load's %v: the warmup is its first part, left out of the figures", e.Warmup, total)
	}
}

// param reads a param's values.
func (d *decoder) param(k, n *node) (Param, bool) {
	prm := Param{Name: k.value, Pos: k.pos}
	switch n.kind {
	case kindSeq:
		for _, v := range n.vals {
			s, ok := d.scalar(v, "a value of "+k.value)
			if !ok {
				continue
			}
			prm.Values = append(prm.Values, ParamValue{Label: s, Value: value(v)})
		}
	case kindMap:
		for i, name := range n.keys {
			v := n.vals[i]
			switch v.kind {
			case kindScalar:
				prm.Values = append(prm.Values, ParamValue{Label: name.value, Value: value(v)})
			case kindMap:
				// A value that sets several things at once: {vus: 100, iterations: 10},
				// read in templates as {{ case.vus }}.
				fields := map[string]any{}
				for j, fk := range v.keys {
					if s, ok := d.scalar(v.vals[j], k.value+"."+name.value+"."+fk.value); ok {
						_ = s
						fields[fk.value] = value(v.vals[j])
					}
				}
				prm.Values = append(prm.Values, ParamValue{Label: name.value, Value: fields})
			default:
				d.errorf(v.pos, "the value of %s.%s must be a value or a mapping of values", k.value, name.value)
			}
		}
	case kindScalar:
		if strings.Contains(n.value, "..") {
			vals, err := parseRange(n.value)
			if err != nil {
				d.errorf(n.pos, "param %s: %v", k.value, err)
				return prm, false
			}
			for _, v := range vals {
				prm.Values = append(prm.Values, ParamValue{Label: strconv.FormatInt(v, 10), Value: int(v)})
			}
		} else {
			prm.Values = append(prm.Values, ParamValue{Label: n.value, Value: value(n)})
		}
	default:
		d.errorf(n.pos, "param %s needs values", k.value)
		return prm, false
	}
	if len(prm.Values) == 0 {
		d.errorf(n.pos, "param %s has no values", k.value)
		return prm, false
	}
	if namesBoxes(n) {
		d.boxes(k, n, &prm)
	}
	seen := map[string]bool{}
	prm.Numeric = true
	for _, v := range prm.Values {
		if seen[v.Label] {
			d.errorf(n.pos, "param %s has the value %s twice", k.value, v.Label)
		}
		seen[v.Label] = true
		switch v.Value.(type) {
		case int, float64:
		default:
			prm.Numeric = false
		}
	}
	return prm, true
}

// parseRange reads "1..10" (step 1), "1..10 +2" (step 2) or "1..64 x2"
// (doubling).
func parseRange(s string) ([]int64, error) {
	body, step := s, ""
	if i := strings.IndexAny(s, " \t"); i >= 0 {
		body, step = s[:i], strings.TrimSpace(s[i:])
	}
	lo, hi, _ := strings.Cut(body, "..")
	a, err1 := strconv.ParseInt(strings.TrimSpace(lo), 10, 64)
	b, err2 := strconv.ParseInt(strings.TrimSpace(hi), 10, 64)
	if err1 != nil || err2 != nil || b < a {
		return nil, fmt.Errorf("bad range %q: want FROM..TO with whole numbers, FROM no more than TO, and an optional step (+2) or factor (x2)", s)
	}
	add, mul := int64(1), int64(1)
	switch {
	case step == "":
	case strings.HasPrefix(step, "+"):
		add, err1 = strconv.ParseInt(step[1:], 10, 64)
	case strings.HasPrefix(step, "x") || strings.HasPrefix(step, "*"):
		add = 0
		mul, err1 = strconv.ParseInt(step[1:], 10, 64)
	default:
		err1 = fmt.Errorf("bad step")
	}
	if err1 != nil || add < 0 || (add == 0 && mul < 2) || (mul > 1 && a <= 0) {
		return nil, fmt.Errorf("bad range %q: the step must be +N (N ≥ 1) or xN (N ≥ 2, from a positive start)", s)
	}
	var out []int64
	for v := a; v <= b; {
		out = append(out, v)
		if len(out) > 1000 {
			return nil, fmt.Errorf("range %q has over 1000 values", s)
		}
		if add > 0 {
			v += add
		} else {
			if v > math.MaxInt64/mul {
				break
			}
			v *= mul
		}
	}
	return out, nil
}

// DefaultRepeat is how many times each point runs when the plan does not
// say: five, because four runs a side is the fewest with which the
// Mann-Whitney test can call a difference significant at α = 0.05.
const DefaultRepeat = 5

// checkPoints refuses params that make more than MaxPoints points, or more
// than MaxRuns runs with repeat, before anything lists them.
func (d *decoder) checkPoints(e *Experiment, top *node) {
	points := e.PointCount()
	where := e.Pos
	if n := top.get("params"); n != nil {
		where = n.pos
	}
	if points > MaxPoints {
		d.errorf(where, "params make %s points (%s); the most is %s (loadlab's limit; see Limits in docs/plan.md)", group(points), e.Vary, group(MaxPoints))
		return
	}
	if runs := points * int64(e.Repeat); runs > MaxRuns {
		if n := top.get("repeat"); n != nil {
			where = n.pos
		}
		d.errorf(where, "%s points × repeat %d make %s runs; the most is %s (loadlab's limit; see Limits in docs/plan.md)", group(points), e.Repeat, group(runs), group(MaxRuns))
	}
}
