package plan

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/parser"
	"github.com/goccy/go-yaml/token"

	"github.com/loadlab/loadlab/internal/spec"
	"github.com/loadlab/loadlab/internal/suggest"
)

// Pos is a place in a plan file (see spec.Pos).
type Pos = spec.Pos

// Error is one problem in a plan, with where it is and what was expected.
type Error struct {
	Pos Pos
	Msg string
}

func (e *Error) Error() string {
	return e.Pos.String() + ": " + cutMessage(e.Msg)
}

// Errors are every problem found in a plan, in file order.
type Errors []*Error

// sorted orders errors by place and drops repeats.
func (es Errors) sorted() Errors {
	sort.SliceStable(es, func(i, j int) bool {
		a, b := es[i].Pos, es[j].Pos
		return a.Line < b.Line || a.Line == b.Line && a.Col < b.Col
	})
	out := es[:0]
	for i, e := range es {
		if i > 0 && e.Error() == es[i-1].Error() {
			continue
		}
		out = append(out, e)
	}
	return out
}

func (es Errors) Error() string {
	lines := make([]string, len(es))
	for i, e := range es {
		lines[i] = e.Error()
	}
	return strings.Join(lines, "\n")
}

// kind is the shape of a node.
type kind int

const (
	kindNull kind = iota
	kindScalar
	kindMap
	kindSeq
)

func (k kind) String() string {
	return [...]string{"nothing", "a value", "a mapping", "a list"}[k]
}

// node is a YAML value with its position: the plan decoder walks these rather
// than goccy's AST so that every value it reads knows where it came from.
type node struct {
	kind   kind
	pos    Pos
	value  string // scalars: the text as written, without quotes
	quoted bool   // a quoted string: never a number or a boolean
	// written is the scalar's text before the plan's constants were
	// rendered into it ("Bearer {{ tok }}"), when they were.
	written string
	keys    []*node
	vals    []*node // mappings: vals[i] belongs to keys[i]; sequences: the items
}

func (n *node) get(key string) *node {
	for i, k := range n.keys {
		if k.value == key {
			return n.vals[i]
		}
	}
	return nil
}

// parseYAML reads a plan file into nodes. Syntax errors and duplicate keys
// come back positioned.
func parseYAML(file string, data []byte) (*node, error) {
	if pos, deep := tooDeep(file, data); deep {
		return nil, Errors{{Pos: pos, Msg: fmt.Sprintf("YAML nested too deeply: the most is %d levels of mappings and lists (see Limits in docs/plan.md)", MaxDepth)}}
	}
	f, err := parser.ParseBytes(data, 0)
	if err != nil {
		var se *yaml.SyntaxError
		if errors.As(err, &se) && se.Token != nil {
			pos := tokenPos(file, se.Token)
			return nil, Errors{{Pos: pos, Msg: "YAML: " + se.Message + braceHint(data, pos.Line) + tabHint(data, pos.Line)}}
		}
		var de *yaml.DuplicateKeyError
		if errors.As(err, &de) && de.Token != nil {
			return nil, Errors{{Pos: tokenPos(file, de.Token), Msg: "YAML: " + de.Message}}
		}
		return nil, Errors{{Pos: Pos{File: file, Line: 1, Col: 1}, Msg: "YAML: " + firstLine(err.Error())}}
	}
	if len(f.Docs) == 0 || f.Docs[0].Body == nil {
		return &node{kind: kindNull, pos: Pos{File: file, Line: 1, Col: 1}}, nil
	}
	if len(f.Docs) > 1 {
		return nil, Errors{{Pos: Pos{File: file, Line: 1, Col: 1}, Msg: "a plan file holds one YAML document, found " + fmt.Sprint(len(f.Docs))}}
	}
	c := converter{file: file}
	n := c.convert(f.Docs[0].Body)
	if len(c.errs) > 0 {
		return nil, c.errs
	}
	return n, nil
}

// braceHint explains the commonest YAML surprise in plan files: a value that
// starts with {{ is a YAML mapping unless it is quoted.
func braceHint(data []byte, line int) string {
	lines := strings.Split(string(data), "\n")
	// The parser may place an error past the last line (found by FuzzLoad).
	from, to := min(max(line-2, 0), len(lines)), min(max(line, 0), len(lines))
	for _, l := range lines[from:to] {
		if strings.Contains(l, ": {{") || strings.Contains(l, "- {{") {
			return ` (a value that starts with {{ must be quoted: "{{ name }}")`
		}
	}
	return ""
}

// tabHint says why a line indented with a tab does not parse: YAML
// indents with spaces only, and its parser's words for it are "found
// character that cannot start any token".
func tabHint(data []byte, line int) string {
	lines := strings.Split(string(data), "\n")
	if line < 1 || line > len(lines) {
		return ""
	}
	l := lines[line-1]
	if indent := l[:len(l)-len(strings.TrimLeft(l, " \t"))]; strings.Contains(indent, "\t") {
		return ": indent with spaces, not tabs (YAML does not allow tabs in indentation)"
	}
	return ""
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

func tokenPos(file string, t *token.Token) Pos {
	return Pos{File: file, Line: t.Position.Line, Col: t.Position.Column}
}

type converter struct {
	file  string
	errs  Errors
	depth int
	// tooDeep: the file nests deeper than MaxDepth, said once; what is
	// inside is not converted, nor is the mapping around it checked, which
	// would only add errors about the nothing put in its place.
	tooDeep bool
}

func (c *converter) convert(n ast.Node) *node {
	pos := Pos{File: c.file}
	if t := n.GetToken(); t != nil {
		pos = tokenPos(c.file, t)
	}
	if c.tooDeep {
		return &node{kind: kindNull, pos: pos}
	}
	c.depth++
	defer func() { c.depth-- }()
	if c.depth > MaxDepth {
		c.tooDeep = true
		c.errs = append(c.errs, &Error{Pos: pos, Msg: fmt.Sprintf("YAML nested too deeply: the most is %d levels of mappings and lists (see Limits in docs/plan.md)", MaxDepth)})
		return &node{kind: kindNull, pos: pos}
	}
	switch n := n.(type) {
	case *ast.NullNode:
		return &node{kind: kindNull, pos: pos}
	case *ast.StringNode:
		q := n.Token != nil && (n.Token.Type == token.DoubleQuoteType || n.Token.Type == token.SingleQuoteType)
		return c.scalar(&node{kind: kindScalar, pos: pos, value: n.Value, quoted: q})
	case *ast.LiteralNode:
		return c.scalar(&node{kind: kindScalar, pos: pos, value: n.Value.Value, quoted: true})
	case *ast.IntegerNode, *ast.FloatNode, *ast.BoolNode, *ast.InfinityNode, *ast.NanNode:
		return c.scalar(&node{kind: kindScalar, pos: pos, value: n.GetToken().Value})
	case *ast.MappingNode:
		m := &node{kind: kindMap, pos: pos}
		for _, mv := range n.Values {
			c.pair(m, mv)
		}
		return m
	case *ast.MappingValueNode:
		m := &node{kind: kindMap, pos: pos}
		c.pair(m, n)
		return m
	case *ast.SequenceNode:
		s := &node{kind: kindSeq, pos: pos}
		for _, v := range n.Values {
			s.vals = append(s.vals, c.convert(v))
		}
		return s
	case *ast.AnchorNode:
		return c.convert(n.Value)
	case *ast.AliasNode:
		// goccy resolves aliases when decoding, not in the AST: look the anchor up.
		c.errs = append(c.errs, &Error{Pos: pos, Msg: "YAML aliases (*name) are not supported in plan files"})
		return &node{kind: kindNull, pos: pos}
	case *ast.TagNode:
		return c.convert(n.Value)
	case *ast.CommentGroupNode:
		return &node{kind: kindNull, pos: pos}
	case *ast.MappingKeyNode:
		return c.convert(n.Value)
	}
	c.errs = append(c.errs, &Error{Pos: pos, Msg: fmt.Sprintf("unsupported YAML (%s)", n.Type())})
	return &node{kind: kindNull, pos: pos}
}

// scalar refuses a value longer than MaxValueBytes, quoting only its start.
func (c *converter) scalar(n *node) *node {
	if len(n.value) > MaxValueBytes {
		c.errs = append(c.errs, &Error{Pos: n.pos, Msg: fmt.Sprintf("a value of %s (%q…); the most is %s (see Limits in docs/plan.md)", byteCount(len(n.value)), head(n.value), byteCount(MaxValueBytes))})
		return &node{kind: kindNull, pos: n.pos}
	}
	return n
}

func (c *converter) pair(m *node, mv *ast.MappingValueNode) {
	if _, ok := mv.Key.(*ast.MergeKeyNode); ok {
		c.errs = append(c.errs, &Error{Pos: tokenPos(c.file, mv.Key.GetToken()), Msg: "YAML merge keys (<<) are not supported in plan files"})
		return
	}
	before := len(c.errs)
	k := c.convert(mv.Key)
	if c.tooDeep || len(c.errs) > before {
		return // the key is already an error
	}
	if k.kind != kindScalar {
		c.errs = append(c.errs, &Error{Pos: k.pos, Msg: "a mapping key must be a plain value, not " + k.kind.String()})
		return
	}
	if prev := m.get(k.value); prev != nil {
		c.errs = append(c.errs, &Error{Pos: k.pos, Msg: fmt.Sprintf("duplicate key %q", k.value)})
		return
	}
	var v *node
	if mv.Value == nil {
		v = &node{kind: kindNull, pos: k.pos}
	} else {
		v = c.convert(mv.Value)
	}
	m.keys = append(m.keys, k)
	m.vals = append(m.vals, v)
}

// didYouMean suggests the known word closest to w, if one is close enough.
func didYouMean(w string, known []string) string {
	if best := suggest.Closest(w, known); best != "" {
		return fmt.Sprintf("; did you mean %q?", best)
	}
	return ""
}

// sortedKeys lists the names of a map in order.
func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
