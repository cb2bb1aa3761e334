package handlers

import (
	"bytes"
	"encoding/json"
	"slices"
	"sort"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
)

// JSON bodies built by hand for the hostile matrix (TestHostileInput).

// jobject is a JSON object whose members keep their order and may repeat; a jraw value is
// written as given (it may be invalid JSON on purpose), anything else is marshalled.
type jobject []jmember

type jmember struct {
	name  string
	value any
}

type jraw string

func (o jobject) encode() []byte {
	var b bytes.Buffer
	o.write(&b)
	return b.Bytes()
}

func (o jobject) write(b *bytes.Buffer) {
	b.WriteByte('{')
	for i, m := range o {
		if i > 0 {
			b.WriteByte(',')
		}
		name, _ := json.Marshal(m.name)
		b.Write(name)
		b.WriteByte(':')
		switch v := m.value.(type) {
		case jobject:
			v.write(b)
		case jraw:
			b.WriteString(string(v))
		default:
			raw, err := json.Marshal(v)
			if err != nil {
				panic(err)
			}
			b.Write(raw)
		}
	}
	b.WriteByte('}')
}

// with returns a copy with the member at path set to v (appended when absent).
func (o jobject) with(path []string, v any) jobject {
	out := slices.Clone(o)
	for i, m := range out {
		if m.name != path[0] {
			continue
		}
		if len(path) == 1 {
			out[i].value = v
		} else {
			out[i].value = m.value.(jobject).with(path[1:], v)
		}
		return out
	}
	if len(path) > 1 {
		return append(out, jmember{path[0], jobject{}.with(path[1:], v)})
	}
	return append(out, jmember{path[0], v})
}

// dup returns a copy with a second member named like path's last element, holding v, after
// the first one in the same object.
func (o jobject) dup(path []string, v any) jobject {
	out := slices.Clone(o)
	if len(path) > 1 {
		for i, m := range out {
			if m.name == path[0] {
				out[i].value = m.value.(jobject).dup(path[1:], v)
			}
		}
		return out
	}
	return append(out, jmember{path[0], v})
}

// get returns the value of the member at path (nil when absent).
func (o jobject) get(path []string) any {
	for _, m := range o {
		if m.name != path[0] {
			continue
		}
		if len(path) == 1 {
			return m.value
		}
		return m.value.(jobject).get(path[1:])
	}
	return nil
}

// toAny decodes the encoded object (for schema checks of the base bodies).
func (o jobject) toAny() (any, error) {
	var v any
	dec := json.NewDecoder(bytes.NewReader(o.encode()))
	dec.UseNumber()
	err := dec.Decode(&v)
	return v, err
}

func hostileNested(n int) string { return strings.Repeat("[", n) + strings.Repeat("]", n) }

func hostileArrayOf(n int, elem string) string {
	return "[" + strings.TrimSuffix(strings.Repeat(elem+",", n), ",") + "]"
}

var (
	hostile400Digits   = strings.Repeat("9", 400)
	hostileLargeString = `"` + strings.Repeat("a", hostileLarge) + `"`
	hostileHugeString  = `"` + strings.Repeat("a", hostileHuge) + `"`
)

// hostileWrongTypes are JSON values of every type but the one s declares.
func hostileWrongTypes(s *openapi3.Schema) []jraw {
	switch {
	case s.Type.Is("string"):
		return []jraw{`12345`, `true`, `{"a":"b"}`, `["x"]`, `null`}
	case s.Type.Is("integer"), s.Type.Is("number"):
		return []jraw{`"12"`, `1.5`, `true`, `{}`, `[1]`, `null`}
	case s.Type.Is("boolean"):
		return []jraw{`"true"`, `0`, `{}`, `[]`, `null`}
	case s.Type.Is("array"):
		return []jraw{`"quotes:read"`, `{}`, `1`, `null`}
	case s.Type.Is("object"):
		return []jraw{`"x"`, `[]`, `1`, `null`}
	}
	return []jraw{`null`}
}

// hostileProp is one property of a request schema, nested objects included.
type hostileProp struct {
	path   []string
	schema *openapi3.Schema
}

func hostileProps(s *openapi3.Schema, prefix []string) []hostileProp {
	names := make([]string, 0, len(s.Properties))
	for name := range s.Properties {
		names = append(names, name)
	}
	sort.Strings(names)
	var out []hostileProp
	for _, name := range names {
		ps := s.Properties[name].Value
		path := append(slices.Clone(prefix), name)
		out = append(out, hostileProp{path, ps})
		if ps.Type.Is("object") {
			out = append(out, hostileProps(ps, path)...)
		}
	}
	return out
}
