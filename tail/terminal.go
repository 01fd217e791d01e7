package tail

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// printable makes an object's text safe to write to a terminal: a value may
// hold escape sequences (ESC ] 0 ; … BEL retitles a terminal, ESC [ 2 J
// clears it). Line breaks and tabs become a space, as a table cell is one
// line; every other C0 or C1 control character, DEL, and each byte that is
// not UTF-8 is written as a visible escape (\x1b, \u009b). -o json and yaml
// print values exactly, escaped by their encoders.
func printable(s string) string {
	clean := true
	for _, r := range s {
		if r == utf8.RuneError || isControl(r) {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == '\n' || r == '\t':
			b.WriteByte(' ')
		case r == utf8.RuneError && n == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r < 0x80 && isControl(r):
			fmt.Fprintf(&b, `\x%02x`, r)
		case isControl(r):
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

// isControl reports C0 (\r included), DEL and C1 control characters.
func isControl(r rune) bool { return r < 0x20 || r == 0x7f || r >= 0x80 && r < 0xa0 }
