package config

import (
	"fmt"
	"regexp"
	"strings"

	yamlv2 "go.yaml.in/yaml/v2"
	"gopkg.in/yaml.v3"
)

// badLine returns the line to report for a YAML syntax error that yaml.v3
// placed at line with message msg. For an item that breaks a block mapping or
// sequence (a key at the wrong indentation, a stray tab), yaml.v3 names only
// the line where the enclosing collection began (the list item's first line);
// yaml.v2, parsing the same text, names the offending token, so its line is
// taken. Other errors keep yaml.v3's line: the opening line of an unclosed
// quote or flow collection is the useful one there.
func badLine(data []byte, line int, msg string) int {
	blockParse := msg == "did not find expected key" || msg == "did not find expected '-' indicator"
	tab := strings.HasPrefix(msg, "found a tab character")
	if !blockParse && !tab {
		return line
	}
	var v any
	err := yamlv2.Unmarshal(data, &v)
	if err == nil {
		return line
	}
	n, msg2 := yamlError(err)
	if n == 0 || msg2 != msg {
		return line // not the same error: keep yaml.v3's account
	}
	return n
}

// misread says how YAML read a string field's scalar other than as written,
// with the quoting that works, or "" when it read it as written: `op: >` is
// an empty folded block (and `|` a literal one), `op: !=` a tag.
func misread(n *yaml.Node, path string) string {
	as := "as in " + path[strings.LastIndex(path, ".")+1:] + ": "
	if strings.HasSuffix(path, "]") {
		as = "as in " // a list's item
	}
	switch {
	case n.Value == "" && n.Style&yaml.FoldedStyle != 0:
		return fmt.Sprintf("YAML reads > here as a folded block, empty: quote it, %s\">\"", as)
	case n.Value == "" && n.Style&yaml.LiteralStyle != 0:
		return fmt.Sprintf("YAML reads | here as a literal block, empty: quote it, %s\"|\"", as)
	case strings.HasPrefix(n.Tag, "!") && !strings.HasPrefix(n.Tag, "!!"):
		text := strings.TrimSpace(n.Tag + " " + n.Value)
		return fmt.Sprintf("YAML reads %s as a tag: quote it, %s%q", n.Tag, as, text)
	}
	return ""
}

// opSymbolRE finds an operator's symbol that YAML cannot read unquoted: `>`
// and `>=` (a folded block's indicator) and `!=` (a tag's).
var opSymbolRE = regexp.MustCompile(`(?:^|[\s{,])op:\s*(>=|>|!=)(?:$|[\s,}])`)

// symbolHint returns, for a YAML syntax error at line, the line of an
// unquoted operator symbol there or on the line before, and a hint to
// quote it; line and "" when there is none.
func symbolHint(data []byte, line int) (int, string) {
	lines := strings.Split(string(data), "\n")
	for _, n := range []int{line - 1, line} {
		if n < 1 || n > len(lines) {
			continue
		}
		if m := opSymbolRE.FindStringSubmatch(lines[n-1]); m != nil {
			return n, fmt.Sprintf(" (quote an operator's symbol in YAML: op: %q)", m[1])
		}
	}
	return line, ""
}
