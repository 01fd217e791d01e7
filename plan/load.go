package plan

import (
	"errors"
	"fmt"
	"slices"

	"github.com/dynwatch/dynwatch/action"
	"github.com/dynwatch/dynwatch/config"
	"github.com/dynwatch/dynwatch/health"
	"github.com/dynwatch/dynwatch/payload"
	"github.com/dynwatch/dynwatch/rules"
)

// File is a config file loaded, validated and compiled: the decoded tree (with
// its path, source and line table), the compiled rules, the redactor, and each
// action compiled once.
type File struct {
	*config.File
	// Rules are the compiled rules, in file order.
	Rules []*rules.Rule
	// Redactor blanks the configured paths of payload objects.
	Redactor *payload.Redactor
	// Actions are the compiled actions, in file order.
	Actions []*action.Action
	// Health computes objects' health (the config's health list, else
	// kstatus' rules): the Deriver of every Evaluator built from this file.
	Health *health.Checker
}

// Load reads a config file and compiles it. A non-nil error is an I/O error
// or config.Problems: every problem in the file, in file order.
func Load(path string) (*File, error) {
	cf, err := config.Load(path)
	return compile(cf, err)
}

// LoadWith is Load with the config's load options.
func LoadWith(path string, o config.Options) (*File, error) {
	cf, err := config.LoadWith(path, o)
	return compile(cf, err)
}

// Parse compiles a config file's content; name is used in messages.
func Parse(name string, data []byte) (*File, error) {
	cf, err := config.Parse(name, data)
	return compile(cf, err)
}

// ParseWith is Parse with the config's load options.
func ParseWith(name string, data []byte, o config.Options) (*File, error) {
	cf, err := config.ParseWith(name, data, o)
	return compile(cf, err)
}

// compile runs the steps above the schema (rules and action kinds) even when the
// schema had problems, so that one run reports every problem.
func compile(cf *config.File, err error) (*File, error) {
	var ps config.Problems
	if err != nil && !errors.As(err, &ps) {
		return nil, err
	}
	if cf == nil {
		return nil, err
	}
	f := &File{File: cf, Redactor: payload.NewRedactor(cf.Config.Redact)}
	rs, rps := rules.Compile(cf)
	f.Rules = rs
	ps = append(ps, unreported(rps, ps)...)
	hc, hps := health.New(cf.Config.Health)
	f.Health = hc
	for _, r := range rs {
		r.SetHealthPaths(health.Paths(hc))
	}
	for _, p := range hps {
		ps = append(ps, unreported(config.Problems{cf.Problem(fmt.Sprintf("health[%d].%s", p.Index, p.Field), "%v", p.Err)}, ps)...)
	}
	for i, spec := range cf.Config.Actions {
		if spec.Kind() == "" {
			continue // config has reported it
		}
		a, ferr := action.Compile(spec)
		if ferr != nil {
			if cf.EnvUnset(fmt.Sprintf("actions[%d].%s", i, ferr.Field)) {
				continue // its value is not known offline
			}
			ps = append(ps, cf.Problem(fmt.Sprintf("actions[%d].%s", i, ferr.Field), "%v", ferr.Err))
			continue
		}
		f.Actions = append(f.Actions, a)
	}
	if len(ps) > 0 {
		return nil, ps.Sorted()
	}
	return f, nil
}

// unreported returns the problems of ps at paths the schema's problems
// (schema) do not name: a value the decoder refused (an op that is no
// string) is left empty, and is reported once, as the file reads it, not
// again as missing.
func unreported(ps, schema config.Problems) config.Problems {
	var out config.Problems
	for _, p := range ps {
		if !slices.ContainsFunc(schema, func(s config.Problem) bool { return s.Path == p.Path }) {
			out = append(out, p)
		}
	}
	return out
}

// Rule returns the named rule, or nil.
func (f *File) Rule(name string) *rules.Rule {
	for _, r := range f.Rules {
		if r.Name == name {
			return r
		}
	}
	return nil
}

// CompiledAction returns the named action, compiled, or nil.
func (f *File) CompiledAction(name string) *action.Action {
	for _, a := range f.Actions {
		if a.Spec.Name == name {
			return a
		}
	}
	return nil
}
