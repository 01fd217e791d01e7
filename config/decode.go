package config

import (
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// Problem is one thing wrong with a config file, located by line and field path.
type Problem struct {
	File string
	Line int
	Path string // e.g. rules[2].when[0].op
	Msg  string
}

func (p Problem) Error() string {
	loc := p.File
	if p.Line > 0 {
		loc = fmt.Sprintf("%s:%d", p.File, p.Line)
	}
	if p.Path == "" {
		return loc + ": " + p.Msg
	}
	return loc + ": " + p.Path + ": " + p.Msg
}

// Problems is every problem found in a config file, in file order. It is returned
// whole so that a user fixes a file in one pass, not one error per run.
type Problems []Problem

func (ps Problems) Error() string {
	lines := make([]string, len(ps))
	for i, p := range ps {
		lines[i] = p.Error()
	}
	return strings.Join(lines, "\n")
}

// Duration is a Go duration written as a string ("30s", "5m") in the config file.
type Duration time.Duration

// Std returns d as a time.Duration.
func (d Duration) Std() time.Duration { return time.Duration(d) }

// Value is a condition value kept as the YAML node it was written as, so that its
// type (number, string, boolean, list) survives decoding.
type Value struct {
	Node *yaml.Node
}

// IsSet reports whether the key was present in the file.
func (v Value) IsSet() bool { return v.Node != nil }

// OptString is a string whose absence differs from "" (group: "" is the core group,
// no group at all means any group).
type OptString struct {
	Set bool
	Val string
}

var (
	durationType  = reflect.TypeFor[Duration]()
	valueType     = reflect.TypeFor[Value]()
	optStringType = reflect.TypeFor[OptString]()
)

// reflectValue returns what the pointer v points to, for the decoder to fill.
func reflectValue(v any) reflect.Value { return reflect.ValueOf(v).Elem() }

// decoder fills Go structs from a yaml.Node tree the strict way: unknown keys,
// duplicate keys and wrong types are problems, and decoding goes on after each one
// so that every problem is reported. It records the line of every field path it
// sees, so that later validation can point at the right line too.
type decoder struct {
	file     string
	lines    map[string]int
	problems Problems
}

func (d *decoder) addf(line int, path, format string, args ...any) {
	d.problems = append(d.problems, Problem{File: d.file, Line: line, Path: path, Msg: fmt.Sprintf(format, args...)})
}

// lineOf returns the line of path in lines, or of its nearest recorded ancestor.
func lineOf(lines map[string]int, path string) int {
	for {
		if l, ok := lines[path]; ok {
			return l
		}
		i := strings.LastIndexAny(path, ".[")
		if i < 0 {
			return lines[""]
		}
		path = path[:i]
	}
}

func joinPath(parent, key string) string {
	if parent == "" {
		return key
	}
	return parent + "." + key
}

func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		switch n.ShortTag() {
		case "!!str":
			return fmt.Sprintf("the string %q", n.Value)
		case "!!null":
			return "null"
		default:
			return n.Value
		}
	case yaml.AliasNode:
		return "an alias"
	}
	return "something else"
}

func (d *decoder) decode(n *yaml.Node, v reflect.Value, path string) {
	if n.Kind == yaml.DocumentNode {
		if len(n.Content) == 0 {
			return
		}
		n = n.Content[0]
	}
	if n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	d.lines[path] = n.Line
	switch v.Type() {
	case valueType:
		v.Set(reflect.ValueOf(Value{Node: n}))
		return
	case optStringType:
		if n.Kind != yaml.ScalarNode || n.ShortTag() == "!!null" {
			if n.ShortTag() == "!!null" {
				v.Set(reflect.ValueOf(OptString{Set: true}))
				return
			}
			d.addf(n.Line, path, "want a string, got %s", kindName(n))
			return
		}
		v.Set(reflect.ValueOf(OptString{Set: true, Val: n.Value}))
		return
	case durationType:
		if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!str" && n.ShortTag() != "!!int" {
			d.addf(n.Line, path, "want a duration such as \"30s\", got %s", kindName(n))
			return
		}
		dur, err := time.ParseDuration(n.Value)
		if n.ShortTag() == "!!int" && n.Value == "0" {
			dur, err = 0, nil
		}
		if err != nil {
			d.addf(n.Line, path, "want a duration such as \"30s\" or \"5m\", got %q", n.Value)
			return
		}
		if dur < 0 {
			d.addf(n.Line, path, "must not be negative, got %q", n.Value)
			return
		}
		v.SetInt(int64(dur))
		return
	}
	if n.ShortTag() == "!!null" && v.Kind() != reflect.Interface {
		return // an empty key keeps its zero value, as in Go's own decoders
	}
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			v.Set(reflect.New(v.Type().Elem()))
		}
		d.decode(n, v.Elem(), path)
	case reflect.Struct:
		d.decodeStruct(n, v, path)
	case reflect.Slice:
		if n.Kind != yaml.SequenceNode {
			d.addf(n.Line, path, "want a list, got %s", kindName(n))
			return
		}
		s := reflect.MakeSlice(v.Type(), len(n.Content), len(n.Content))
		for i, c := range n.Content {
			d.decode(c, s.Index(i), fmt.Sprintf("%s[%d]", path, i))
		}
		v.Set(s)
	case reflect.Map:
		if n.Kind != yaml.MappingNode {
			d.addf(n.Line, path, "want a mapping, got %s", kindName(n))
			return
		}
		m := reflect.MakeMapWithSize(v.Type(), len(n.Content)/2)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, val := n.Content[i], n.Content[i+1]
			p := joinPath(path, k.Value)
			if m.MapIndex(reflect.ValueOf(k.Value)).IsValid() {
				d.addf(k.Line, p, "duplicate key %q", k.Value)
				continue
			}
			e := reflect.New(v.Type().Elem()).Elem()
			d.decode(val, e, p)
			m.SetMapIndex(reflect.ValueOf(k.Value), e)
		}
		v.Set(m)
	case reflect.String:
		if n.Kind != yaml.ScalarNode {
			d.addf(n.Line, path, "want a string, got %s", kindName(n))
			return
		}
		if msg := misread(n, path); msg != "" {
			d.addf(n.Line, path, "%s", msg)
			return
		}
		v.SetString(n.Value)
	case reflect.Bool:
		var b bool
		if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!bool" || n.Decode(&b) != nil {
			d.addf(n.Line, path, "want true or false, got %s", kindName(n))
			return
		}
		v.SetBool(b)
	case reflect.Int, reflect.Int64, reflect.Int32:
		i, err := strconv.ParseInt(n.Value, 0, 64)
		if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!int" || err != nil {
			d.addf(n.Line, path, "want a whole number, got %s", kindName(n))
			return
		}
		v.SetInt(i)
	case reflect.Float64:
		f, err := strconv.ParseFloat(n.Value, 64)
		if n.Kind != yaml.ScalarNode || (n.ShortTag() != "!!int" && n.ShortTag() != "!!float") || err != nil {
			d.addf(n.Line, path, "want a number, got %s", kindName(n))
			return
		}
		v.SetFloat(f)
	default:
		d.addf(n.Line, path, "cannot decode into %s", v.Type())
	}
}

func (d *decoder) decodeStruct(n *yaml.Node, v reflect.Value, path string) {
	if n.Kind != yaml.MappingNode {
		d.addf(n.Line, path, "want a mapping, got %s", kindName(n))
		return
	}
	t := v.Type()
	fields := make(map[string]int, t.NumField())
	var known []string
	for i := range t.NumField() {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("yaml"), ",")
		if name == "" || name == "-" {
			continue
		}
		fields[name] = i
		known = append(known, name)
	}
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, val := n.Content[i], n.Content[i+1]
		p := joinPath(path, k.Value)
		idx, ok := fields[k.Value]
		switch {
		case !ok:
			d.addf(k.Line, p, "unknown field %q%s (want one of %s)", k.Value, didYouMean(k.Value, known), strings.Join(known, ", "))
			continue
		case seen[k.Value]:
			d.addf(k.Line, p, "duplicate key %q", k.Value)
			continue
		}
		seen[k.Value] = true
		d.decode(val, v.Field(idx), p)
	}
}
