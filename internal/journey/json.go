package journey

import (
	"fmt"
	"math"
	"strconv"

	"github.com/loadlab/loadlab/internal/expr"
)

// JSON is a JSON body template: a YAML value with templates in its strings.
// Its parts that never change are written once, when it is built.
type JSON struct {
	static []byte // the whole value when nothing in it changes
	keys   [][]byte
	vals   []*JSON
	isObj  bool
	isArr  bool
	tpl    *expr.Template
}

// JSONStatic is a value written out already ("null", "3", `"a"`).
func JSONStatic(b []byte) *JSON { return &JSON{static: b} }

// JSONExpr is a value a template gives for each request: one expression
// keeps its type (a number stays a number), other text is a string.
func JSONExpr(t *expr.Template) *JSON { return &JSON{tpl: t} }

// JSONObject is an object of these keys and values, in order.
func JSONObject(keys []string, vals []*JSON) *JSON {
	j := &JSON{isObj: true, vals: vals}
	for _, k := range keys {
		j.keys = append(j.keys, AppendJSONString(nil, k))
	}
	return j.fold()
}

// JSONArray is an array of these values.
func JSONArray(vals []*JSON) *JSON { return (&JSON{isArr: true, vals: vals}).fold() }

// fold writes out an object or array whose values are all static.
func (j *JSON) fold() *JSON {
	for _, v := range j.vals {
		if v.static == nil {
			return j
		}
	}
	j.static, _ = j.Append(nil, nil)
	j.keys, j.vals, j.isObj, j.isArr = nil, nil, false, false
	return j
}

// Static is the value written out, when nothing in it changes.
func (j *JSON) Static() ([]byte, bool) { return j.static, j.static != nil }

// Append appends the value for a VU's variables.
func (j *JSON) Append(dst []byte, st *expr.State) ([]byte, error) {
	switch {
	case j.static != nil:
		return append(dst, j.static...), nil
	case j.tpl != nil:
		v, err := j.tpl.Eval(st)
		if err != nil {
			return dst, err
		}
		if s, ok := v.(string); ok && j.tpl.Limit > 0 && len(s) > j.tpl.Limit {
			return dst, &expr.TooLongError{Limit: j.tpl.Limit, AtLeast: len(s)}
		}
		return appendJSONValue(dst, v), nil
	case j.isObj:
		dst = append(dst, '{')
		for i, k := range j.keys {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = append(dst, k...)
			dst = append(dst, ':')
			var err error
			if dst, err = j.vals[i].Append(dst, st); err != nil {
				return dst, err
			}
		}
		return append(dst, '}'), nil
	case j.isArr:
		dst = append(dst, '[')
		for i, v := range j.vals {
			if i > 0 {
				dst = append(dst, ',')
			}
			var err error
			if dst, err = v.Append(dst, st); err != nil {
				return dst, err
			}
		}
		return append(dst, ']'), nil
	}
	return append(dst, "null"...), nil
}

func appendJSONValue(dst []byte, v any) []byte {
	switch v := v.(type) {
	case string:
		return AppendJSONString(dst, v)
	case int:
		return strconv.AppendInt(dst, int64(v), 10)
	case int64:
		return strconv.AppendInt(dst, v, 10)
	case float64:
		if math.IsInf(v, 0) || math.IsNaN(v) {
			return append(dst, "null"...)
		}
		return strconv.AppendFloat(dst, v, 'g', -1, 64)
	case bool:
		return strconv.AppendBool(dst, v)
	case nil:
		return append(dst, "null"...)
	}
	return AppendJSONString(dst, fmt.Sprint(v))
}

// AppendJSONString appends s as a JSON string.
func AppendJSONString(dst []byte, s string) []byte {
	const hex = "0123456789abcdef"
	dst = append(dst, '"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"' || c == '\\':
			dst = append(dst, '\\', c)
		case c == '\n':
			dst = append(dst, '\\', 'n')
		case c == '\r':
			dst = append(dst, '\\', 'r')
		case c == '\t':
			dst = append(dst, '\\', 't')
		case c < 0x20:
			dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
		default:
			dst = append(dst, c)
		}
	}
	return append(dst, '"')
}
