package expr

import (
	"fmt"
	"reflect"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/ast"
)

// An expression can build values far larger than any it is given without
// calling repeat(): reduce(1..40, #acc + #acc, "x") doubles a string forty
// times, join(map(1..1000, s), "") copies s a thousand times, and
// reduce(1..400, #acc + randomString(1048576), "") copies 80 GB on its way
// to 400 MiB. The render's bound (max_request_body...) applies only to what
// the expression returns. So growthGuard rewrites every expression, when it
// compiles, to pass the value of each step that may make a new value, every
// function call, built-in (map, join, replace...), + of anything but two
// plain values and the body of each
// closure (each iteration of map, filter, reduce...), through guard, which
// charges its size to the evaluation's budget: a string its length, a list
// 16 bytes an element, a map 32 an entry, anything else 1. An evaluation
// that spends more than growthBudget fails at once with an error that says
// so. A step typed a number or a bool is left as it is, and a template of
// plain names ({{ user.id }}) is not an expression: they pay nothing; an
// expression pays one call a step that makes a string, list or map.

const (
	guardName = "$guard"  // the function growthGuard's calls name
	budgetKey = "$budget" // where a State's environment holds its budget
)

// growthBudget is what one evaluation may make: twice the longest
// text a template renders, and at least 1 MiB.
func growthBudget(maxText int) int { return max(2*maxText, 1<<20) }

// budget is what one evaluation has made so far.
type budget struct{ used, limit int }

func (b *budget) spend(v any) error {
	n := 1
	switch v := v.(type) {
	case string:
		n += len(v)
	case []any:
		n += 16 * len(v)
		for _, e := range v {
			if s, ok := e.(string); ok {
				n += len(s) // [s, s, s...] joined would copy each
			}
		}
	case map[string]any:
		n += 32 * len(v)
	default:
		if r := reflect.ValueOf(v); r.Kind() == reflect.Slice || r.Kind() == reflect.Map {
			n += 16 * r.Len()
		}
	}
	b.used += n
	if b.used > b.limit {
		return fmt.Errorf("the expression made over %s of values on its way (strings, lists and maps built in map, reduce, join, +...), more than one evaluation may: at most %s, twice the longest text a template makes (see Limits in docs/plan.md)", Bytes(b.limit), Bytes(b.limit))
	}
	return nil
}

// growthGuard wraps the nodes that may make a new value in guard calls.
// done holds the calls it made, so that a second walk leaves them be.
type growthGuard struct{ done map[ast.Node]bool }

func (g *growthGuard) Visit(node *ast.Node) {
	switch n := (*node).(type) {
	case *ast.CallNode:
		if id, ok := n.Callee.(*ast.IdentifierNode); ok && id.Value == guardName || g.done[n] {
			return
		}
	case *ast.BuiltinNode, *ast.ArrayNode:
	case *ast.BinaryNode:
		if n.Operator != "+" || leaf(n.Left) && leaf(n.Right) {
			// "Bearer " + token makes no more than its two values: left
			// as it is, so the common case pays nothing. A chain (a + b +
			// c) is guarded from its second +, a closure's body always.
			return
		}
	case *ast.PredicateNode:
		if n.Node != nil && !g.done[n.Node] {
			n.Node = g.wrap(n.Node)
		}
		return
	default:
		return
	}
	typ := (*node).Type()
	if typ == nil {
		return // not typed by the check before the patch: an error it will report
	}
	switch typ.Kind() {
	case reflect.String, reflect.Slice, reflect.Map, reflect.Interface:
	default:
		return // a number or a bool makes nothing that grows: iteration + 1 pays nothing
	}
	ast.Patch(node, g.wrap(*node))
}

func (g *growthGuard) wrap(n ast.Node) ast.Node {
	call := &ast.CallNode{Callee: &ast.IdentifierNode{Value: guardName}, Arguments: []ast.Node{&ast.IdentifierNode{Value: "$env"}, n}}
	g.done[call] = true
	return call
}

// guardOptions add growthGuard and its function to a compile.
func guardOptions() []expr.Option {
	return []expr.Option{
		expr.Patch(&growthGuard{done: map[ast.Node]bool{}}),
		expr.Function(guardName, func(p ...any) (any, error) {
			if b, ok := p[0].(map[string]any)[budgetKey].(*budget); ok {
				if err := b.spend(p[1]); err != nil {
					return nil, err
				}
			}
			return p[1], nil
		}, new(func(any, string) string), new(func(any, int) int), new(func(any, float64) float64), new(func(any, bool) bool), new(func(any, []any) []any), new(func(any, any) any)),
	}
}

// leaf is a node that makes no new value: a name, a literal, # or a field.
func leaf(n ast.Node) bool {
	switch n.(type) {
	case *ast.IdentifierNode, *ast.StringNode, *ast.IntegerNode, *ast.FloatNode, *ast.BoolNode, *ast.NilNode,
		*ast.ConstantNode, *ast.MemberNode, *ast.PointerNode:
		return true
	}
	return false
}
