package plan

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/loadlab/loadlab/internal/limits"
)

// boxKeys are the fields of a box.
var boxKeys = []string{"cpus", "memory", "swap", "price_per_hour"}

// namesBoxes reports whether a param's values are boxes: a mapping of
// named values of which one at least names price_per_hour.
func namesBoxes(n *node) bool {
	if n.kind != kindMap {
		return false
	}
	for _, v := range n.vals {
		if v.kind == kindMap && v.get("price_per_hour") != nil {
			return true
		}
	}
	return false
}

// boxes reads a param of boxes into prm's values' Box; every value must be
// a box, and every box limits something and has a price.
func (d *decoder) boxes(k, n *node, prm *Param) {
	prm.Boxes = true
	for i, name := range n.keys {
		v := n.vals[i]
		what := k.value + "." + name.value
		if v.kind != kindMap {
			d.errorf(v.pos, "%s must be a box, {cpus: 1, memory: 512MiB, price_per_hour: 0.05}: the other values of %s name a price_per_hour, which makes them boxes", what, k.value)
			continue
		}
		m, ok := d.fields(v, what, boxKeys...)
		if !ok {
			continue
		}
		b := &Box{Pos: v.pos}
		for _, f := range []struct {
			key string
			dst *string
		}{{"cpus", &b.CPUs}, {"memory", &b.Memory}, {"swap", &b.Swap}} {
			fv := m.get(f.key)
			if fv == nil {
				continue
			}
			s, ok := d.str(fv, what+"."+f.key)
			if !ok {
				continue
			}
			if _, err := parseLimit(f.key, s); err != nil {
				d.errorf(fv.pos, "%s.%s: %v", what, f.key, err)
				continue
			}
			*f.dst = s
		}
		switch pv := m.get("price_per_hour"); {
		case pv == nil:
			d.errorf(v.pos, "%s needs price_per_hour, as the other boxes of %s have: what one such box costs an hour (0.05)", what, k.value)
		default:
			s, ok := d.scalar(pv, what+".price_per_hour")
			if !ok {
				break
			}
			price, err := strconv.ParseFloat(strings.TrimPrefix(strings.TrimSpace(s), "$"), 64)
			if err != nil || !(price > 0) || math.IsInf(price, 0) {
				d.errorf(pv.pos, "%s.price_per_hour must be a price above 0, in any currency, such as 0.05, got %q", what, s)
				break
			}
			b.PricePerHour = price
		}
		switch {
		case m.get("cpus") == nil && m.get("memory") == nil:
			d.errorf(v.pos, "%s limits nothing: give it cpus, memory or both, which the server runs under at its points", what)
		case m.get("swap") != nil && m.get("memory") == nil:
			d.errorf(m.get("swap").pos, "%s.swap needs %s.memory: swap is allowed beside a memory limit", what, what)
		}
		prm.Values[i].Box = b
	}
}

// checkBoxes refuses a param of boxes without a server section, whose
// limits it sets, and a plain server.limits value that a box sets too.
func (d *decoder) checkBoxes(p *Plan) {
	if p.Experiment == nil {
		return
	}
	e := p.Experiment
	if e.TargetRate > 0 && !slices.ContainsFunc(e.Params, func(prm Param) bool { return prm.Boxes }) {
		d.errorf(e.TargetRatePos, "target_rate is the rate the cheapest setup of boxes must serve: it needs a param of boxes, whose values name price_per_hour")
	}
	for _, prm := range e.Params {
		if !prm.Boxes {
			continue
		}
		if p.Server == nil {
			d.errorf(prm.Pos, "param %s names boxes (price_per_hour), whose limits apply to the server under test: add a server: section that starts it", prm.Name)
			continue
		}
		l := p.Server.Limits
		if l == nil {
			continue
		}
		for _, f := range []struct {
			key string
			t   Text
			set func(*Box) bool
		}{
			{"cpus", l.CPUs, func(b *Box) bool { return b.CPUs != "" }},
			{"memory", l.Memory, func(b *Box) bool { return b.Memory != "" }},
			{"swap", l.Swap, func(b *Box) bool { return b.Swap != "" }},
		} {
			if f.t.Src == "" || strings.Contains(f.t.Src, "{{") {
				continue // not set, or a template (which reads the box, most likely)
			}
			for _, v := range prm.Values {
				if v.Box != nil && f.set(v.Box) {
					d.errorf(f.t.Pos, "server.limits.%s is set here and by box %s of param %s: leave it to the boxes, or write {{ %s.%s }}", f.key, v.Label, prm.Name, prm.Name, f.key)
					break
				}
			}
		}
	}
}

// boxLimits lays the limits of the point's boxes over those server.limits
// rendered: a box sets what server.limits leaves unset, or sets as a plain
// value (checkBoxes refused those), while a template of server.limits is
// kept. params are the point's values; a box's value is the mapping of its
// fields, as templates read it.
func (p *Plan) boxLimits(params map[string]any, l limits.Limits) (limits.Limits, Errors) {
	if p.Experiment == nil || params == nil {
		return l, nil
	}
	var errs Errors
	for _, prm := range p.Experiment.Params {
		if !prm.Boxes {
			continue
		}
		fields, _ := params[prm.Name].(map[string]any)
		var set *ServerLimits
		if p.Server != nil {
			set = p.Server.Limits
		}
		for _, key := range []string{"cpus", "memory", "swap"} {
			raw, ok := fields[key]
			if !ok {
				continue
			}
			if set != nil && map[string]Text{"cpus": set.CPUs, "memory": set.Memory, "swap": set.Swap}[key].Src != "" {
				continue
			}
			v, err := parseLimit(key, format(raw))
			if err != nil {
				errs = append(errs, &Error{Pos: prm.Pos, Msg: fmt.Sprintf("param %s: %s: %v", prm.Name, key, err)})
				continue
			}
			switch key {
			case "cpus":
				l.CPUs = v.(limits.CPUs)
			case "memory":
				l.Memory = v.(int64)
			case "swap":
				l.Swap, l.SwapSet = v.(int64), true
			}
		}
	}
	return l, errs
}

// readTargetRate reads target_rate: the rate, in requests per second, that
// the cheapest setup of boxes must serve.
func (d *decoder) readTargetRate(e *Experiment, n *node) {
	s, ok := d.scalar(n, "target_rate")
	if !ok {
		return
	}
	t := strings.TrimSpace(s)
	t = strings.TrimSpace(strings.TrimSuffix(strings.TrimSuffix(t, "/s"), "req"))
	v, err := strconv.ParseFloat(strings.ReplaceAll(t, "_", ""), 64)
	if err != nil || !(v > 0) || math.IsInf(v, 0) {
		d.errorf(n.pos, "target_rate must be a rate above 0 in requests per second, such as 500 or 500/s, got %q", s)
		return
	}
	e.TargetRate, e.TargetRatePos = v, n.pos
}
