package config

import (
	"strings"

	yamlv2 "go.yaml.in/yaml/v2"
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
