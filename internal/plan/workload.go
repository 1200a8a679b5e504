package plan

import (
	"path/filepath"
	"time"
)

func (d *decoder) load(p *Plan, root, n *node) {
	if n == nil {
		d.errorf(Pos{File: root.pos.File, Line: 1, Col: 1}, "the plan has no load: expected load: with closed:, open: or stages:")
		return
	}
	d.loadInto(&p.Load, n)
}

// perScenario checks a plan whose scenarios have loads of their own: every
// scenario has one, with no weight, and the plan has no load: of its own.
// It reports whether the plan's scenarios have loads.
func (d *decoder) perScenario(p *Plan, top *node) bool {
	var first *Scenario
	for _, sc := range p.Scenarios {
		if sc.Load != nil {
			first = sc
			break
		}
	}
	if first == nil {
		return false
	}
	if n := top.get("load"); n != nil {
		d.errorf(n.pos, "scenario %s has a load: of its own (at %s), so the plan's load: has nothing to run: give every scenario its own load: and remove this one, or remove the scenarios' loads and pick scenarios by weight under this one", first.Name, first.Load.Pos)
	}
	for _, sc := range p.Scenarios {
		switch {
		case sc.Load == nil:
			d.errorf(sc.Pos, "scenario %s has no load: when a scenario has a load: of its own (%s at %s), every scenario does: each runs its own VUs or arrivals, all at once", sc.Name, first.Name, first.Load.Pos)
			sc.Load = &Workload{Pos: sc.Pos} // in error: empty
		case sc.weightPos != (Pos{}):
			d.errorf(sc.weightPos, "scenario %s has its own load:, which says how much of it runs; weight shares one load: between scenarios: remove it", sc.Name)
		}
	}
	return true
}

// flatLoad refuses, with one error, a load written without its kind, as
// k6 writes its options: load: {vus: 10, duration: 30s}.
func (d *decoder) flatLoad(n *node) bool {
	if n == nil || n.kind != kindMap {
		return false
	}
	var flat *node
	for _, k := range n.keys {
		switch k.value {
		case "closed", "open", "stages":
			return false
		case "vus", "duration", "iterations", "rate":
			if flat == nil {
				flat = k
			}
		}
	}
	if flat == nil {
		return false
	}
	kind := "closed"
	if flat.value == "rate" {
		kind = "open"
	}
	d.errorf(flat.pos, "%s belongs inside a kind of load: load.%s.%s, as in load: {closed: {vus: 10, duration: 30s}} (VUs that each start a journey when the last ends), or load: {open: {rate: 50/s, duration: 30s}} (journeys that start on schedule)", flat.value, kind, flat.value)
	return true
}

// loadInto reads a load: (the plan's, or a scenario's) into l.
func (d *decoder) loadInto(l *Workload, n *node) {
	if d.flatLoad(n) {
		return
	}
	m, ok := d.fields(n, "load", "closed", "open", "stages", "max_vus", "grace")
	if !ok {
		return
	}
	l.Pos = n.pos
	var kinds []*node
	for i, k := range m.keys {
		switch k.value {
		case "closed", "open", "stages":
			kinds = append(kinds, m.vals[i])
			_ = i
		}
	}
	if len(kinds) != 1 {
		d.errorf(n.pos, "load needs exactly one of closed:, open: or stages:, found %d", len(kinds))
		return
	}
	if g := m.get("grace"); g != nil {
		l.Grace, _ = d.duration(g, "load.grace")
	}
	maxVUs := int64(0)
	if v := m.get("max_vus"); v != nil {
		if x, ok := d.integer(v, "load.max_vus", 1); ok && d.atMost(v, "load.max_vus", x, MaxVUs) {
			maxVUs = x
		}
	}
	switch {
	case m.get("closed") != nil:
		d.closed(l, m.get("closed"))
		if m.get("max_vus") != nil {
			d.errorf(m.get("max_vus").pos, "max_vus goes with open: or rate stages; closed load has vus:")
		}
	case m.get("open") != nil:
		d.open(l, m.get("open"))
		if m.get("max_vus") != nil {
			d.errorf(m.get("max_vus").pos, "give max_vus inside open:")
		}
	default:
		d.stages(l, m.get("stages"), m.get("max_vus"), int(maxVUs))
	}
}

func (d *decoder) closed(l *Workload, n *node) {
	m, ok := d.fields(n, "load.closed", "vus", "iterations", "duration")
	if !ok {
		return
	}
	l.Kind = LoadClosed
	if v := m.get("vus"); v != nil {
		if x, ok := d.integer(v, "vus", 1); ok && d.atMost(v, "vus", x, MaxVUs) {
			l.VUs = int(x)
		}
	} else {
		d.errorf(n.pos, "closed load needs vus: (the number of virtual users)")
	}
	if v := m.get("iterations"); v != nil {
		l.Iterations, _ = d.integer(v, "iterations", 1)
	}
	if v := m.get("duration"); v != nil {
		l.Duration, _ = d.duration(v, "duration")
	}
	if m.get("iterations") == nil && m.get("duration") == nil {
		d.errorf(n.pos, "closed load needs iterations: (per VU) or duration:, or both")
	}
}

func (d *decoder) open(l *Workload, n *node) {
	m, ok := d.fields(n, "load.open", "rate", "max_vus", "duration")
	if !ok {
		return
	}
	l.Kind = LoadOpen
	rn := m.get("rate")
	if rn == nil {
		d.errorf(n.pos, "open load needs rate: such as 100/s or 7000/10m")
	} else if r, ok := d.rate(rn, "rate", false); ok {
		l.Rate = r
	}
	if v := m.get("max_vus"); v != nil {
		if x, ok := d.integer(v, "max_vus", 1); ok && d.atMost(v, "max_vus", x, MaxVUs) {
			l.MaxVUs = int(x)
		}
	} else {
		d.errorf(n.pos, "open load needs max_vus: the most journeys in progress at once (an arrival that finds them all busy is dropped and counted)")
	}
	if v := m.get("duration"); v != nil {
		l.Duration, _ = d.duration(v, "duration")
	} else if rn != nil && l.Rate.Per > time.Second {
		l.Duration = l.Rate.Per // 7000/10m: 7000 arrivals over 10 minutes
	} else if rn != nil && l.Rate.Per > 0 {
		d.errorf(n.pos, "open load at %v needs duration:", l.Rate)
	}
}

// stages reads ramping VUs ({vus: N} then {ramp: N, over: D} and {hold: D})
// or a ramping arrival rate ({rate: R} then {ramp: R, over: D}, {hold: D}).
func (d *decoder) stages(l *Workload, n, maxNode *node, maxVUs int) {
	if n.kind != kindSeq || len(n.vals) < 2 {
		d.errorf(n.pos, "stages must be a list that starts with {vus: N} or {rate: R} and goes on with {ramp: ..., over: ...} or {hold: ...}")
		return
	}
	first, ok := d.fields(n.vals[0], "the first stage", "vus", "rate")
	if !ok {
		return
	}
	rates := first.get("rate") != nil
	switch {
	case rates && first.get("vus") != nil, !rates && first.get("vus") == nil:
		d.errorf(first.pos, "the first stage sets where the load starts: {vus: N} or {rate: R}, one of them")
		return
	case rates:
		l.Kind = LoadRampRate
		l.StartRate, _ = d.rate(first.get("rate"), "rate", true)
		if maxNode == nil {
			d.errorf(n.pos, "rate stages need max_vus: next to stages:")
		}
		l.MaxVUs = maxVUs
	default:
		l.Kind = LoadRampVUs
		if x, ok := d.integer(first.get("vus"), "vus", 0); ok && d.atMost(first.get("vus"), "vus", x, MaxVUs) {
			l.StartVUs = int(x)
		}
		if maxNode != nil {
			d.errorf(maxNode.pos, "max_vus goes with rate stages; VU stages say their VUs")
		}
	}
	cur := l.StartRate
	curVUs := l.StartVUs
	for _, s := range n.vals[1:] {
		m, ok := d.fields(s, "a stage", "ramp", "over", "hold")
		if !ok {
			continue
		}
		switch {
		case m.get("hold") != nil:
			if m.get("ramp") != nil || m.get("over") != nil {
				d.errorf(s.pos, "a stage either ramps ({ramp: ..., over: ...}) or holds ({hold: D})")
				continue
			}
			dur, ok := d.duration(m.get("hold"), "hold")
			if !ok {
				continue
			}
			if rates {
				l.RateStages = append(l.RateStages, RateStage{Target: cur, Over: dur})
			} else {
				l.VUStages = append(l.VUStages, VUStage{Target: curVUs, Over: dur})
			}
		case m.get("ramp") != nil:
			on := m.get("over")
			if on == nil {
				d.errorf(s.pos, "a ramp needs over: (how long it takes), such as over: 2m")
				continue
			}
			dur, ok := d.duration(on, "over")
			if !ok {
				continue
			}
			if rates {
				r, ok := d.rate(m.get("ramp"), "ramp", true)
				if !ok {
					continue
				}
				cur = r
				l.RateStages = append(l.RateStages, RateStage{Target: r, Over: dur})
			} else {
				x, ok := d.integer(m.get("ramp"), "ramp (VUs)", 0)
				if !ok || !d.atMost(m.get("ramp"), "ramp (VUs)", x, MaxVUs) {
					continue
				}
				curVUs = int(x)
				l.VUStages = append(l.VUStages, VUStage{Target: curVUs, Over: dur})
			}
		default:
			d.errorf(s.pos, "a stage needs ramp: (with over:) or hold:")
		}
	}
	if rates {
		total := 0.0
		r0 := l.StartRate.PerSecondOrZero()
		for _, s := range l.RateStages {
			r1 := s.Target.PerSecondOrZero()
			total += (r0 + r1) / 2 * s.Over.Seconds()
			r0 = r1
		}
		if total <= 0 && len(l.RateStages) > 0 {
			d.errorf(n.pos, "these stages have no arrivals: every rate is zero")
		}
	} else if len(l.VUStages) > 0 {
		most := l.StartVUs
		for _, s := range l.VUStages {
			most = max(most, s.Target)
		}
		if most == 0 {
			d.errorf(n.pos, "these stages never have a VU")
		}
	}
}

// checkRowsPerVU: a data source with pick: vu gives each VU a row of its
// own, so it needs a row for every VU the load may have at once (a closed
// load's vus, the top of its VU stages, an open load's max_vus). Said
// before any load, at the pick.
func (d *decoder) checkRowsPerVU(p *Plan) {
	vus := p.MostVUs()
	if vus == 0 {
		return // the load itself is in error
	}
	source := p.Load.vuSource()
	if p.PerScenario() {
		source = "the scenarios' loads together"
	}
	for _, f := range p.Data {
		if f.Pick != PickVU || len(f.Rows) >= vus {
			continue
		}
		d.errorf(f.PickPos, "data source %s: pick: vu gives each VU its own row, but %s has %d rows for up to %d VUs (%s): add rows, or lower the VUs", f.Name, filepath.Base(f.File), len(f.Rows), vus, source)
	}
}

// PerScenario reports whether the plan's scenarios have loads of their
// own, all running at once, in place of the plan's load: (which is then
// empty) and weights.
func (p *Plan) PerScenario() bool {
	return len(p.Scenarios) > 0 && p.Scenarios[0].Load != nil
}

// MostVUs is the most VUs the plan's load may have at once: with loads per
// scenario, theirs together.
func (p *Plan) MostVUs() int {
	if !p.PerScenario() {
		return p.Load.MostVUs()
	}
	n := 0
	for _, sc := range p.Scenarios {
		n += sc.Load.MostVUs()
	}
	return n
}

// LoadLength is how long the plan's load lasts when time fixes it (see
// Workload.Length): with loads per scenario, the longest; 0 when one ends
// with its iterations only.
func (p *Plan) LoadLength() time.Duration {
	if !p.PerScenario() {
		return p.Load.Length()
	}
	var most time.Duration
	for _, sc := range p.Scenarios {
		n := sc.Load.Length()
		if n == 0 {
			return 0
		}
		most = max(most, n)
	}
	return most
}

// vuSource says which setting gives the load its most VUs.
func (w *Workload) vuSource() string {
	switch w.Kind {
	case LoadClosed:
		return "load.closed.vus"
	case LoadOpen:
		return "load.open.max_vus"
	case LoadRampVUs:
		return "the highest of load.stages"
	}
	return "load.max_vus"
}
