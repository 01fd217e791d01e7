package tail

import (
	"fmt"
	"strconv"
	"strings"
)

// kubePath reads a path as kubectl users write one, in custom-columns or
// JSONPath form (.spec.size, {.spec.size}, {.spec.containers[0].image},
// .metadata.labels['app.kubernetes.io/name']), into the gjson path dynwatch
// evaluates (spec.size, spec.containers.0.image,
// metadata.labels.app\.kubernetes\.io/name). A path in neither form is
// taken as gjson already and returned as it is. What gjson cannot say the
// same way (a filter, a slice, recursive descent, range) is an error that
// gives the gjson spelling, when there is one.
func kubePath(p string) (string, error) {
	orig := p
	braced := strings.HasPrefix(p, "{") && strings.HasSuffix(p, "}")
	if braced {
		p = strings.TrimSpace(p[1 : len(p)-1]) // { .spec.size } as kubectl reads it
		if strings.Contains(p, "}") || strings.Contains(p, "{") || strings.HasPrefix(p, "range") {
			return "", fmt.Errorf("%s: one JSONPath expression is taken, without range or several {…}", orig)
		}
	}
	p = strings.TrimPrefix(p, "$")
	if !braced && !strings.HasPrefix(p, ".") {
		return orig, nil // a gjson path
	}
	if strings.Contains(p, "..") {
		return "", fmt.Errorf("%s: recursive descent (..) has no gjson spelling; name each level", orig)
	}
	var b strings.Builder
	for i := 0; i < len(p); {
		switch c := p[i]; c {
		case '\\':
			b.WriteString(p[i:min(i+2, len(p))])
			i += 2
		case '.':
			if b.Len() > 0 {
				b.WriteByte('.')
			}
			i++
		case '[':
			end := strings.IndexByte(p[i:], ']')
			if strings.HasPrefix(p[i:], "[?(") {
				end = strings.Index(p[i:], ")]") + 1
			}
			if end <= 0 {
				return "", fmt.Errorf("%s: unclosed [", orig)
			}
			seg, err := bracket(p[i+1:i+end], orig, b.String(), p[i+end+1:])
			if err != nil {
				return "", err
			}
			if b.Len() > 0 {
				b.WriteByte('.')
			}
			b.WriteString(seg)
			i += end + 1
		default:
			b.WriteByte(c)
			i++
		}
	}
	if b.Len() == 0 {
		return "", fmt.Errorf("%s: an empty path", orig)
	}
	return b.String(), nil
}

// bracket translates what stands in [ ] of a JSONPath: an index (one below
// zero counts from the end: gjson's @reverse), *, or a quoted key; a filter or a slice is an error giving the gjson spelling of
// the whole path (head before it, rest after it), when there is one.
func bracket(in, orig, head, rest string) (string, error) {
	switch {
	case in == "*":
		return "#", nil
	case strings.HasPrefix(in, "?("):
		cond := strings.TrimSuffix(strings.TrimPrefix(in, "?("), ")")
		cond = strings.ReplaceAll(strings.ReplaceAll(cond, "@.", ""), "'", `"`)
		tail, _ := kubePath("." + strings.TrimPrefix(rest, "."))
		if rest == "" {
			tail = ""
		}
		spelled := strings.Trim(head+".#("+cond+")."+tail, ".")
		return "", fmt.Errorf("%s: JSONPath filters are not taken; in gjson: %s (the first match; #(…)# for all)", orig, spelled)
	case strings.Contains(in, ":"):
		return "", fmt.Errorf("%s: JSONPath slices are not taken; name one index ([0]) or all ([*])", orig)
	}
	if n, err := strconv.Atoi(in); err == nil {
		if n < 0 { // counted from the end, as kubectl counts it
			return "@reverse." + strconv.Itoa(-n-1), nil
		}
		return in, nil
	}
	if len(in) >= 2 && (in[0] == '\'' || in[0] == '"') && in[len(in)-1] == in[0] {
		key := in[1 : len(in)-1]
		r := strings.NewReplacer(`.`, `\.`, `*`, `\*`, `?`, `\?`, `|`, `\|`, `#`, `\#`, `@`, `\@`)
		return r.Replace(key), nil
	}
	return "", fmt.Errorf("%s: cannot read [%s] (want an index, * or a quoted key)", orig, in)
}
