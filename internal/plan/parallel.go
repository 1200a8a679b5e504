package plan

// DefaultParallelMax is a parallel group's max when it gives none: the
// connections per origin browsers open over HTTP/1.1.
const DefaultParallelMax = 6

// parallel decodes a parallel: step into its requests, each marked with
// the group. A group holds requests only: no pause, socket or group, and
// no capture, since the order its requests end in is not defined.
func (d *decoder) parallel(n *node) []*Step {
	if _, ok := d.fields(n, "a parallel step", "parallel"); !ok {
		return nil
	}
	gn := n.get("parallel")
	m, ok := d.fields(gn, "parallel", "name", "max", "steps")
	if !ok {
		return nil
	}
	g := &Group{Name: "parallel", Max: DefaultParallelMax, Pos: gn.pos}
	if v := m.get("name"); v != nil {
		if s, ok := d.str(v, "parallel name"); ok {
			g.Name = s
		}
	}
	if v := m.get("max"); v != nil {
		if x, ok := d.integer(v, "parallel max", 1); ok {
			g.Max = int(min(x, MaxSteps))
		}
	}
	steps := m.get("steps")
	if steps == nil || steps.kind == kindNull || (steps.kind == kindSeq && len(steps.vals) == 0) {
		where := gn.pos
		if steps != nil {
			where = steps.pos
		}
		d.errorf(where, "parallel group %q has no steps: expected a list of requests such as - get: /app.css", g.Name)
		return nil
	}
	if steps.kind != kindSeq {
		d.errorf(steps.pos, "parallel steps must be a list, got %s", describe(steps))
		return nil
	}
	if !d.atMost(steps, "the number of steps of parallel group "+g.Name, int64(len(steps.vals)), MaxSteps) {
		return nil
	}
	var out []*Step
	for _, s := range steps.vals {
		if s.kind == kindMap && s.get("parallel") != nil {
			d.errorf(keyPos(s, "parallel"), "parallel group %q holds another parallel group: groups do not nest; list its requests in the outer group", g.Name)
			continue
		}
		st := d.step(s)
		switch {
		case st == nil:
		case st.IsThink:
			d.errorf(s.pos, "parallel group %q holds a think: step: a group's requests are sent at once; pause before or after the group", g.Name)
		case st.WS != nil:
			d.errorf(s.pos, "parallel group %q holds a ws: step: a group holds HTTP requests only", g.Name)
		default:
			for _, cp := range st.Captures {
				d.errorf(cp.Pos, "capture %s in parallel group %q: the order its requests end in is not defined, so no step could rely on the value; capture in a step before or after the group", cp.Var, g.Name)
			}
			st.Group = g
			out = append(out, st)
		}
	}
	if len(out) < len(steps.vals) {
		return nil // its errors are reported
	}
	return out
}

// keyPos is where key is written in mapping n.
func keyPos(n *node, key string) Pos {
	for _, k := range n.keys {
		if k.value == key {
			return k.pos
		}
	}
	return n.pos
}
