// Package fieldpath checks and splits the gjson paths that a config names. It is
// the one place that knows which paths dynwatch can walk itself (plain keys
// separated by dots, with \. for a literal dot) and which only gjson can read.
//
// It imports nothing of dynwatch: config, rules, payload and state all use it.
package fieldpath

import (
	"errors"
	"fmt"
	"strings"
)

// Check reports a gjson path that cannot be what the user meant: empty
// components, a dangling escape, unbalanced brackets or quotes.
func Check(p string) error {
	if p == "" {
		return errors.New("empty path")
	}
	if len(p) > 1 && p[0] == '.' && p[1] != '.' {
		return fmt.Errorf("path %q starts with a dot, as kubectl's JSONPath does: write %s (a path here has no leading dot)", p, p[1:])
	}
	depth, inQuote := 0, false
	prev := byte('.')
	for i := 0; i < len(p); i++ {
		ch := p[i]
		if inQuote {
			switch ch {
			case '\\':
				i++
			case '"':
				inQuote = false
			}
			continue
		}
		switch ch {
		case '\\':
			if i == len(p)-1 {
				return fmt.Errorf("path %q ends with an escape character", p)
			}
			i++
			prev = 'a'
			continue
		case '"':
			if depth > 0 {
				inQuote = true
			}
		case '(', '[', '{':
			depth++
		case ')', ']', '}':
			depth--
			if depth < 0 {
				return fmt.Errorf("path %q has an unbalanced %q", p, ch)
			}
		case '.', '|':
			if depth == 0 && (prev == '.' || prev == '|') {
				return fmt.Errorf("path %q has an empty component (escape a literal dot as \\.)", p)
			}
		}
		prev = ch
	}
	if depth != 0 || inQuote {
		return fmt.Errorf("path %q has an unclosed bracket or quote", p)
	}
	if prev == '.' || prev == '|' {
		return fmt.Errorf("path %q ends with %q", p, string(prev))
	}
	return nil
}

// special are the characters of gjson's query, wildcard and modifier syntax.
const special = "*?#|@()[]{}!=<>"

// CheckPlain is Check for paths that dynwatch walks itself (redaction): keys
// separated by dots, with \. for a literal dot; no queries or wildcards.
func CheckPlain(p string) error {
	if err := Check(p); err != nil {
		return err
	}
	if _, ok := Split(p); !ok {
		return fmt.Errorf("path %q: only plain keys separated by dots are allowed here", p)
	}
	return nil
}

// Split splits a plain dotted path into its keys, honouring \. as a literal dot.
// ok is false for a path that uses gjson's query, wildcard or modifier syntax,
// or that has an empty key.
func Split(p string) (keys []string, ok bool) {
	var b strings.Builder
	for i := 0; i < len(p); i++ {
		switch c := p[i]; {
		case c == '\\' && i+1 < len(p):
			i++
			b.WriteByte(p[i])
		case c == '.':
			keys = append(keys, b.String())
			b.Reset()
		case strings.IndexByte(special, c) >= 0:
			return nil, false
		default:
			b.WriteByte(c)
		}
	}
	keys = append(keys, b.String())
	for _, k := range keys {
		if k == "" {
			return nil, false
		}
	}
	return keys, true
}

// IsQuery reports whether a path yields a list of values: it has a # (all
// elements, or a query over them) outside an escape.
func IsQuery(p string) bool {
	for i := 0; i < len(p); i++ {
		switch p[i] {
		case '\\':
			i++
		case '#':
			return true
		}
	}
	return false
}
