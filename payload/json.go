package payload

import (
	"bytes"
	"encoding/json"
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
