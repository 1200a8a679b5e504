package plan

import (
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/loadlab/loadlab/internal/engine"
	"github.com/loadlab/loadlab/internal/expr"
	"github.com/loadlab/loadlab/internal/httpx"
	"github.com/loadlab/loadlab/internal/journey"
	"github.com/loadlab/loadlab/internal/secret"
)

// WSSpec is a ws: step as written: the socket's URL and its do: list.
type WSSpec struct {
	Actions    []WSActionSpec
	MaxMessage int64
}

// WSActionSpec is one item of a ws step's do: list.
type WSActionSpec struct {
	Kind     journey.WSKind
	Pos      Pos
	Message  Text // send:, binary:
	Binary   bool
	Timeout  time.Duration // receive:
	Skip     string
	Expect   *Expect
	Captures []CaptureSpec
	Lo, Hi   time.Duration // think:
}

var wsStepKeys = []string{"ws", "name", "headers", "do", "max_message"}

var wsActionKeys = []string{"send", "binary", "receive", "think", "close"}

// wsStep decodes a ws: step.
func (d *decoder) wsStep(n, m *node) *Step {
	st := &Step{Pos: n.pos, WS: &WSSpec{}}
	for _, k := range m.keys {
		if !slices.Contains(wsStepKeys, k.value) {
			d.errorf(k.pos, "a ws step takes no %s (its keys: %s)", k.value, strings.Join(wsStepKeys, ", "))
		}
	}
	u, ok := d.text(m.get("ws"), "ws")
	if !ok {
		return nil
	}
	switch {
	case strings.HasPrefix(u.Src, "ws://"), strings.HasPrefix(u.Src, "wss://"), strings.HasPrefix(u.Src, "/"):
	default:
		d.errorf(u.Pos, "ws: needs a ws:// or wss:// URL, or a path starting with / under target, got %q", u.Src)
		return nil
	}
	st.URL = u
	st.Method = "WS"
	st.Name = "WS " + secret.URL(u.Src)
	if v := m.get("name"); v != nil {
		if s, ok := d.str(v, "name"); ok {
			st.Name = s
		}
	}
	st.Headers = d.fieldsOf(m.get("headers"), "headers")
	d.checkHeaders(st.Headers)
	if v := m.get("max_message"); v != nil {
		if sz, ok := d.size(v, "max_message"); ok {
			st.WS.MaxMessage = sz
		}
	}
	do := m.get("do")
	if do == nil || do.kind != kindSeq || len(do.vals) == 0 {
		where := n.pos
		if do != nil {
			where = do.pos
		}
		d.errorf(where, "a ws step needs a do: list, such as do: [{send: hello}, {receive: {timeout: 5s}}, {close: {}}]")
		return st
	}
	sent := false // a send since the last receive: a receive answers it
	for _, it := range do.vals {
		im, ok := d.fields(it, "a do: item", wsActionKeys...)
		if !ok {
			continue
		}
		if len(im.keys) != 1 {
			if len(im.keys) > 1 {
				d.errorf(it.pos, "a do: item does one thing (send:, binary:, receive:, think: or close:), but this one has %d keys", len(im.keys))
			} else {
				d.errorf(it.pos, "a do: item needs one of send:, binary:, receive:, think: or close:")
			}
			continue
		}
		k, v := im.keys[0], im.vals[0]
		a := WSActionSpec{Pos: k.pos}
		switch k.value {
		case "send", "binary":
			a.Kind, a.Binary = journey.WSSend, k.value == "binary"
			if a.Message, ok = d.text(v, k.value); !ok {
				continue
			}
			sent = true
		case "receive":
			a.Kind = journey.WSReceive
			rm, ok := &node{kind: kindMap, pos: v.pos}, true // receive: alone takes the next message
			if v.kind != kindNull {
				rm, ok = d.fields(v, "receive", "timeout", "expect", "capture", "skip")
			}
			if !ok {
				continue
			}
			if t := rm.get("timeout"); t != nil {
				a.Timeout, _ = d.duration(t, "receive.timeout")
			} else if !sent {
				d.errorf(k.pos, "this receive follows no send, so it waits for a message the server pushes: give it a timeout, such as receive: {timeout: 5s}")
			}
			if sk := rm.get("skip"); sk != nil {
				a.Skip, _ = d.str(sk, "receive.skip")
			}
			if e := rm.get("expect"); e != nil {
				if _, ok := d.fields(e, "receive.expect", "contains", "json"); ok {
					a.Expect = d.expect(e)
				}
			}
			if cp := rm.get("capture"); cp != nil {
				for _, c := range d.captures(cp) {
					if c.Kind == "header" || c.Kind == "cookie" {
						d.errorf(c.Pos, "capture %s: a message has no %ss; use json:, regex: or css:", c.Var, c.Kind)
						continue
					}
					a.Captures = append(a.Captures, c)
				}
				st.Captures = append(st.Captures, a.Captures...)
			}
			sent = false
		case "think":
			a.Kind = journey.WSThink
			var tmp Step
			d.think(&tmp, v)
			a.Lo, a.Hi = tmp.Think, tmp.ThinkMax
		case "close":
			a.Kind = journey.WSClose
			if v.kind != kindNull && !(v.kind == kindMap && len(v.keys) == 0) {
				d.errorf(v.pos, "close takes no options: write close: {}")
			}
		}
		st.WS.Actions = append(st.WS.Actions, a)
	}
	return st
}

// wsStepNames are the names a ws step's handshakes and sends are kept
// under, for thresholds, that seen does not have yet; it marks them seen.
func wsStepNames(st *Step, seen map[string]bool) []string {
	if st.WS == nil {
		return nil
	}
	var out []string
	for _, n := range []string{st.Name + " handshake", st.Name + " send"} {
		if !seen[n] {
			seen[n] = true
			out = append(out, n)
		}
	}
	return out
}

// wsText is the templates of a ws step, to see which data sources it reads.
func wsText(st *Step) string {
	if st.WS == nil {
		return ""
	}
	var b strings.Builder
	for _, a := range st.WS.Actions {
		b.WriteString(" " + a.Message.Src)
		if a.Expect != nil {
			for _, t := range a.Expect.Contains {
				b.WriteString(" " + t.Src)
			}
			for _, f := range a.Expect.JSON {
				b.WriteString(" " + f.Value.Src)
			}
		}
	}
	return b.String()
}

// wsStep compiles a ws: step. It takes three engine steps: id (its
// messages: round trips, checks and captures), then "NAME handshake" and
// "NAME send".
func (c *compiler) wsStep(prog *engine.Program, id int, scenario string, st *Step, scope *expr.Scope) *engine.Step {
	h := c.p.HTTP
	hid := len(prog.Steps)
	prog.Steps = append(prog.Steps,
		engine.StepInfo{Scenario: scenario, Name: st.Name + " handshake", Checks: []string{journey.CheckSocketOpened}},
		engine.StepInfo{Scenario: scenario, Name: st.Name + " send", Checks: []string{journey.CheckMessageBuilt}})
	ws := &journey.WSStep{ID: id, Handshake: hid, Send: hid + 1, Name: st.Name, Timeout: h.Timeout}
	if ws.Timeout <= 0 {
		ws.Timeout = httpx.DefaultTimeout
	}
	ws.Limits = httpx.WSLimits{MaxHeaderBytes: int(h.MaxHeader), MaxMessage: int(min(h.MaxBody, 1<<30))}
	if st.WS.MaxMessage > 0 {
		ws.Limits.MaxMessage = int(min(st.WS.MaxMessage, 1<<30))
	}
	src := st.URL.Src
	var base *url.URL
	pathSrc, pathOff := src, 0
	if strings.HasPrefix(src, "/") {
		if c.p.Target == nil {
			if !c.p.targetGiven {
				c.d.errorf(st.URL.Pos, "%s has a relative URL but the plan has no target: add target: http://host:port", st.Name)
			}
		} else {
			base = &url.URL{Scheme: c.p.Target.Scheme, Host: c.p.Target.Host}
			ws.Prefix = strings.TrimSuffix(c.p.Target.Path, "/")
		}
	} else {
		rest := src[strings.Index(src, "//")+2:]
		end := strings.IndexAny(rest, "/?")
		if end < 0 {
			end = len(rest)
		}
		if strings.Contains(rest[:end], "{{") {
			c.d.errorf(st.URL.Pos, "the host of a URL cannot be a template; use a plan variable in target: instead")
		} else if u, err := url.Parse(src[:len(src)-len(rest)+end]); err != nil || u.Host == "" {
			c.d.errorf(st.URL.Pos, "bad URL %q", src)
		} else {
			u.Scheme = map[string]string{"ws": "http", "wss": "https"}[u.Scheme]
			base = u
		}
		pathSrc, pathOff = rest[end:], len(src)-len(rest[end:])
		if pathSrc == "" {
			pathSrc = "/"
		}
	}
	ws.Path = c.template(Text{Src: pathSrc, Pos: textPos(st.URL, pathOff)}, scope)
	var all []Field
	for _, f := range h.Headers {
		if !slices.ContainsFunc(st.Headers, func(g Field) bool { return strings.EqualFold(g.Name, f.Name) }) {
			all = append(all, f)
		}
	}
	ws.Headers = c.fields(append(all, st.Headers...), scope)
	view := scope
	for _, a := range st.WS.Actions {
		ja := journey.WSAction{Kind: a.Kind, Binary: a.Binary, Timeout: a.Timeout, Lo: a.Lo, Hi: a.Hi}
		if a.Skip != "" {
			ja.Skip = []byte(a.Skip)
		}
		switch a.Kind {
		case journey.WSSend:
			ja.Message = c.template(a.Message, view)
		case journey.WSReceive:
			if a.Expect != nil {
				ja.Checks = c.checks(a.Expect, view)
			}
			for _, cp := range a.Captures {
				kind := map[string]expr.CaptureKind{"json": expr.FromJSON, "regex": expr.FromRegex, "css": expr.FromCSS}[cp.Kind]
				cc, err := expr.NewCapture(kind, cp.Arg, cp.Attr)
				if err != nil {
					c.d.errorf(cp.ArgP, "capture %s: %v", cp.Var, err)
					continue
				}
				ja.Captures = append(ja.Captures, journey.Capture{Slot: c.global.Slot(cp.Var), Capture: cc, Name: cp.Var, Secret: c.credCaptures[cp.Var]})
				// usable by the actions after this receive
				view = view.Clone()
				view.Unhide(cp.Var)
			}
		}
		ws.Actions = append(ws.Actions, ja)
	}
	prog.Steps[id].Checks = ws.CheckNames() // and each receive's CheckBase
	if base == nil {
		return &engine.Step{ID: id, Name: st.Name}
	}
	ws.Target = c.target(base)
	return &engine.Step{ID: id, Name: st.Name, Socket: ws.Socket()}
}
