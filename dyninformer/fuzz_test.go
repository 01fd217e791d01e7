package dyninformer

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"reflect"
	"testing"
)

// FuzzParseObject: for every JSON object with a metadata object, the cached
// bytes are valid JSON that means the input without managedFields.
func FuzzParseObject(f *testing.F) {
	stream, _ := watchStream()
	for _, line := range bytes.Split(stream, []byte("\n")) {
		f.Add(line)
	}
	f.Add([]byte(`{"metadata":{"managedFields":[],"name":"x"}}`))
	f.Add([]byte(`{"kind":"A","metadata":{"name":"a\"}","managed\u0046ields":{"a":[1,{"b":"]"}]}}}`))
	f.Fuzz(func(t *testing.T, src []byte) {
		o, err := parseObject(src, "", "")
		var ref map[string]any
		if json.Unmarshal(src, &ref) != nil || hasDuplicateKeys(src) {
			return // not an object, or one that decoders read differently
		}
		if _, ok := ref["metadata"].(map[string]any); !ok {
			if err == nil {
				t.Fatalf("no error for an object without metadata: %s", src)
			}
			return
		}
		if err != nil {
			t.Fatalf("parseObject(%s): %v", src, err)
		}
		var got map[string]any
		if err := json.Unmarshal(o.raw, &got); err != nil {
			t.Fatalf("cached bytes are not JSON: %v\n%s\nfrom %s", err, o.raw, src)
		}
		delete(ref["metadata"].(map[string]any), "managedFields")
		if !reflect.DeepEqual(got, ref) {
			t.Fatalf("cached %s\nfrom %s", o.raw, src)
		}
	})
}

// hasDuplicateKeys reports whether any object in the valid JSON b repeats a
// key: encoding/json keeps the last, gjson sees both.
func hasDuplicateKeys(b []byte) bool {
	dec := json.NewDecoder(bytes.NewReader(b))
	type level struct {
		obj  bool
		keys map[string]bool
		key  bool // the next string token is a key
	}
	var stack []*level
	for {
		tok, err := dec.Token()
		if err != nil {
			return false
		}
		var top *level
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		switch v := tok.(type) {
		case json.Delim:
			switch v {
			case '{':
				stack = append(stack, &level{obj: true, keys: map[string]bool{}, key: true})
				continue
			case '[':
				stack = append(stack, &level{})
				continue
			default:
				stack = stack[:len(stack)-1]
			}
		case string:
			if top != nil && top.obj && top.key {
				if top.keys[v] {
					return true
				}
				top.keys[v] = true
				top.key = false
				continue
			}
		}
		if len(stack) > 0 && stack[len(stack)-1].obj {
			stack[len(stack)-1].key = true
		}
	}
}

// FuzzFrameReader: on a stream of valid JSON values, the frames are exactly
// the values encoding/json reads, in every read size, and no byte is scanned
// twice (escapes and runs of backslashes cut anywhere by the reads).
func FuzzFrameReader(f *testing.F) {
	stream, _ := watchStream()
	f.Add(stream, uint8(3), uint8(16))
	f.Add([]byte(`{"a":"\\"} {"b":["}"]}`+"\n"+`[1,{"c":"\""}]`), uint8(1), uint8(1))
	f.Add([]byte(`{"a":"\\\\\\\"\\\\"}{"\\\"":"\u005c\""}`), uint8(2), uint8(5))
	f.Add(backslashFrame(300, '\\'), uint8(7), uint8(200))
	f.Fuzz(func(t *testing.T, stream []byte, chunk, bufSize uint8) {
		var want [][]byte
		dec := json.NewDecoder(bytes.NewReader(stream))
		for {
			var m json.RawMessage
			err := dec.Decode(&m)
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil || (m[0] != '{' && m[0] != '[') {
				return // not a stream of objects: only "no panic" is asked
			}
			want = append(want, m)
		}
		fr := jsonFramer{}.NewFrameReader(&oneByte{data: stream, n: int(chunk)%64 + 1}).(*frameReader)
		for i := 0; ; i++ {
			frame, err := readFrame(fr, int(bufSize)+1)
			if errors.Is(err, io.EOF) {
				if i != len(want) {
					t.Fatalf("%d frames, want %d", i, len(want))
				}
				if fr.scanned > len(stream) {
					t.Fatalf("scanned %d bytes of a stream of %d", fr.scanned, len(stream))
				}
				return
			}
			if err != nil {
				t.Fatalf("frame %d: %v", i, err)
			}
			if i >= len(want) || !bytes.Equal(frame, want[i]) {
				t.Fatalf("frame %d = %q, want %q", i, frame, want)
			}
		}
	})
}
