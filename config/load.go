package config

import (
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"
)

// File is a decoded and validated config file: the tree with its defaults
// applied, and where each field path stands in the file, so that the steps that
// compile it (rules, action kinds) report problems at the right line too.
type File struct {
	// Path is the file the config was read from.
	Path string
	// Source is the file's content, to tell whether the file changed since.
	Source []byte
	// Config is the decoded tree with defaults applied.
	Config *Config

	lines map[string]int
	// envWarnings are the unset variables of Options.UnsetEnvWarns; envUnset
	// the field paths that hold one.
	envWarnings Problems
	envUnset    map[string]bool
	// opts are the options the file was loaded with, for a reload to load
	// its successor with.
	opts Options
	// secrets are the values of the file's ${VAR}s (Secrets).
	secrets *Secrets
}

// Options change how a file is loaded.
type Options struct {
	// UnsetEnvWarns makes a ${VAR} that is not set a warning rather than a
	// problem, and leaves the field that holds it unjudged: for checking a
	// file offline, away from the environment it will run in. Default false.
	UnsetEnvWarns bool
	// Strict makes each insecure shape (insecure.go) a problem, as
	// security.allowInsecure: false does, whatever the file says: check's
	// and run's --strict. Default false.
	Strict bool
}

// LoadOptions returns the options the file was loaded with: a reload loads
// the file's next version with them, so that run's --strict holds for it too.
func (f *File) LoadOptions() Options { return f.opts }

// EnvUnset reports whether the field at path p holds a ${VAR} that was not
// set (only with Options.UnsetEnvWarns): what a later step finds wrong with
// its value is not to be reported.
func (f *File) EnvUnset(p string) bool { return f.envUnset[p] }

// Problem returns a problem at the field path p, located at p's line (or its
// nearest ancestor's). A ${VAR} value the message quotes reads SecretMask:
// check prints problems, run logs them.
func (f *File) Problem(p, format string, args ...any) Problem {
	return Problem{File: f.Path, Line: lineOf(f.lines, p), Path: p, Msg: f.secrets.Mask(fmt.Sprintf(format, args...))}
}

// Action returns the named action spec, or nil.
func (f *File) Action(name string) *ActionSpec { return f.Config.Action(name) }

// StateEnabled reports whether restart state is configured.
func (f *File) StateEnabled() bool { return f.Config.StateEnabled() }

// Load reads, decodes and validates the config file at path. A non-nil error is
// either an I/O error or Problems, every problem in the file.
func Load(path string) (*File, error) {
	return LoadWith(path, Options{})
}

// LoadWith is Load with options.
func LoadWith(path string, o Options) (*File, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read config: %w", err)
	}
	return ParseWith(path, data, o)
}

// Parse decodes and validates a config file's content; name is used in messages.
// The returned File is usable even when there are problems (for the compile
// steps to add theirs); the error is then Problems.
func Parse(name string, data []byte) (*File, error) {
	return ParseWith(name, data, Options{})
}

// ParseWith is Parse with options. After decoding, the steps run once each and
// in this order: expansion of ${VAR}, defaults, checks (the insecure shapes
// among them when they are refused), and the rules' share of the file's
// defaults: section.
func ParseWith(name string, data []byte, o Options) (*File, error) {
	d := &decoder{file: name, lines: map[string]int{}}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		line, msg := yamlError(err)
		line = badLine(data, line, msg)
		var hint string
		line, hint = symbolHint(data, line)
		msg += hint
		return nil, Problems{{File: name, Line: line, Msg: msg}}
	}
	if len(doc.Content) == 0 {
		return nil, Problems{{File: name, Msg: "the file is empty"}}
	}
	cfg := &Config{}
	d.decode(&doc, reflectValue(cfg), "")
	f := &File{Path: name, Source: data, Config: cfg, lines: d.lines, opts: o}
	v := &validator{file: f, unsetEnvWarns: o.UnsetEnvWarns}
	cfg.expandEnv(v)
	f.secrets = newSecrets(v.expanded) // before the checks: Problem masks them
	cfg.applyDefaults()
	cfg.validate(v)
	v.refuseInsecure()
	cfg.inheritDefaults()
	f.envWarnings, f.envUnset = v.envWarnings, v.envUnset
	ps := append(d.problems, unread(v.problems, d.problems)...)
	if len(ps) > 0 {
		return f, ps.Sorted()
	}
	return f, nil
}

// unread returns the validation problems at paths the decoder could read: a
// value it refused (say a negative duration) is left zero, and is reported once,
// by the decoder, not again for being zero.
func unread(validation, decoding Problems) Problems {
	out := validation[:0:0]
	for _, p := range validation {
		if !slices.ContainsFunc(decoding, func(d Problem) bool { return d.Path == p.Path }) {
			out = append(out, p)
		}
	}
	return out
}

// Sorted returns the problems in file order (stable for one line).
func (ps Problems) Sorted() Problems {
	slices.SortStableFunc(ps, func(a, b Problem) int { return a.Line - b.Line })
	return ps
}

var yamlLineRE = regexp.MustCompile(`^(?:yaml: )?line (\d+): `)

// yamlError returns the line of a YAML syntax error and its message without
// the line (said once, in the FILE:LINE prefix). The parser places "did not
// find expected ..." one line before the line that opened the unclosed flow
// collection; that line is the one to report.
func yamlError(err error) (int, string) {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	m := yamlLineRE.FindStringSubmatch(err.Error())
	if m == nil {
		return 0, msg
	}
	var n int
	fmt.Sscan(m[1], &n)
	msg = strings.TrimPrefix(err.Error()[len(m[0]):], "yaml: ")
	if strings.Contains(msg, "did not find expected") {
		n++
	}
	return n, msg
}
