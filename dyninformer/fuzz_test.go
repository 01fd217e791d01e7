package dyninformer

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"reflect"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
	f.Add([]byte(`{"metadata":{"uid":"b\u0031","namespace":"n\"s","name":"x"},"spec":{}}`))
	f.Add([]byte(`{"metadata":{"uid":"0","uid":"1"}}`))
	f.Fuzz(func(t *testing.T, src []byte) {
		o, err := parseObject(src, "", "", nil)
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
		checkShardParse(t, src, o)
	})
}

// checkShardParse: a shard's parse of src is errOtherShard for an object with
// a uid of another shard, else the same Object as without a shard.
func checkShardParse(t *testing.T, src []byte, o *Object) {
	t.Helper()
	for i := range 2 {
		shard := NewShard(2, i, false)
		so, err := parseObject(src, "", "", &shard)
		if o.uid != "" && !shard.Owns(o.uid, o.namespace) {
			if err != errOtherShard {
				t.Fatalf("shard %d: %v for %s of another shard", i, err, src)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(so, o) {
			t.Fatalf("shard %d: %+v, %v; without a shard %+v", i, so, err, o)
		}
	}
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

// FuzzParseList: a body is a list only when it is a JSON object with a kind
// and items. Anything else (a proxy's error page, a Status, a bare object) is
// an error, never a list of nothing; a list of objects with metadata is its
// items, each valid JSON, in number.
func FuzzParseList(f *testing.F) {
	f.Add(benchPage(2))
	for _, s := range []string{
		`{"error":"upstream timeout"}`,
		`{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","reason":"Expired","code":410}`,
		`{"kind":"ConfigMapList","apiVersion":"v1","metadata":{"resourceVersion":"5"}}`,
		`{"apiVersion":"v1","metadata":{"resourceVersion":"5"},"items":[]}`,
		`{"kind":"ConfigMapList","items":null}`,
		`{"apiVersion":"ex.com/v1","items":[{"apiVersion":"ex.com/v1","kind":"W","metadata":{"name":"w"}}],"kind":"WList","metadata":{}}`,
		`{"kin\u0064":"XList","items":[{"metadata":{"name":"a\"]}"}}]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		var l List
		err := parseList(body, &l, nil)
		var ref map[string]json.RawMessage
		if json.Unmarshal(body, &ref) != nil || hasDuplicateKeys(body) {
			return // the API server's JSON is trusted to be valid: only "no panic" is asked
		}
		var kind string
		_, hasItems := ref["items"]
		if json.Unmarshal(ref["kind"], &kind) != nil || kind == "" || !hasItems {
			if err == nil {
				t.Fatalf("a list of %d items from a body without kind or items: %s", len(l.Items), body)
			}
			return
		}
		if !wellFormedList(ref) {
			return
		}
		if err != nil {
			t.Fatalf("parseList(%s): %v", body, err)
		}
		var items []json.RawMessage
		_ = json.Unmarshal(ref["items"], &items)
		if len(l.Items) != len(items) {
			t.Fatalf("%d items, want %d: %s", len(l.Items), len(items), body)
		}
		for i, it := range l.Items {
			if !json.Valid(it.(*Object).raw) {
				t.Fatalf("item %d is not JSON: %s\nfrom %s", i, it.(*Object).raw, body)
			}
		}
	})
}

// wellFormedList reports whether a list's metadata is list metadata and its
// items (an array, or null) objects with metadata.
func wellFormedList(ref map[string]json.RawMessage) bool {
	if md, ok := ref["metadata"]; ok && json.Unmarshal(md, &metav1.ListMeta{}) != nil {
		return false
	}
	var items []map[string]json.RawMessage
	if json.Unmarshal(ref["items"], &items) != nil {
		return false
	}
	for _, it := range items {
		var md map[string]json.RawMessage
		if json.Unmarshal(it["metadata"], &md) != nil || md == nil {
			return false
		}
	}
	return true
}
