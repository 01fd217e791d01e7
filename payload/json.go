package payload

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"
)

// Marshal encodes v as compact JSON without HTML escaping, so that "<redacted>"
// reads as written, not as "\u003credacted\u003e".
func Marshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// Printable returns JSON text fit for a terminal, as the same JSON value:
// encoding/json leaves C1 control characters (U+009B is CSI, which starts a
// terminal escape sequence) and DEL in strings as they are, so they are
// written as \u escapes; whitespace between tokens (\n of an indented value)
// becomes a space, as a table cell is one line; a byte that is not UTF-8 reads
// U+FFFD, as encoding/json would decode it.
func Printable(text string) string {
	i := strings.IndexFunc(text, func(r rune) bool { return r < 0x20 || r >= 0x7f && r < 0xa0 || r == utf8.RuneError })
	if i < 0 {
		return text
	}
	var b strings.Builder
	b.WriteString(text[:i])
	for _, r := range text[i:] {
		switch {
		case r < 0x20:
			b.WriteByte(' ')
		case r >= 0x7f && r < 0xa0 || r == utf8.RuneError:
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}
