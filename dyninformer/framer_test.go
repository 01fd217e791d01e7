package dyninformer

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"
)

// readAll reads every frame of fr with a buffer as large as a frame.
func readAll(t testing.TB, fr io.Reader) [][]byte {
	t.Helper()
	var frames [][]byte
	for {
		frame, err := readFrame(fr, 4<<20)
		if errors.Is(err, io.EOF) {
			return frames
		}
		if err != nil {
			t.Fatal(err)
		}
		frames = append(frames, frame)
	}
}

// TestFrameReaderIsLinearOnBackslashes: a frame with a long run of
// backslashes, read 1460 bytes at a time as a TCP segment brings it, is
// scanned once, not once per read. Run lengths odd and even, and a run that
// ends right at a read's edge, must split the same.
func TestFrameReaderIsLinearOnBackslashes(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		stream []byte
	}{
		{"1 MiB of backslashes", backslashFrame(1<<20, '\\')},
		{"a long run in every read", bytes.Repeat([]byte(`{"a":"`+strings.Repeat(`\\`, 730)+`\"`+`"}`), 50)},
		{"an escaped quote after a long run", []byte(`{"a":"` + strings.Repeat(`\\`, 5000) + `\"}{\\\"` + `"}` + "\n" + `{"b":1}`)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var want [][]byte
			dec := json.NewDecoder(bytes.NewReader(tc.stream))
			for {
				var m json.RawMessage
				if err := dec.Decode(&m); err != nil {
					if !errors.Is(err, io.EOF) {
						t.Fatal(err)
					}
					break
				}
				want = append(want, m)
			}
			fr := jsonFramer{}.NewFrameReader(&oneByte{data: tc.stream, n: 1460}).(*frameReader)
			got := readAll(t, fr)
			if len(got) != len(want) {
				t.Fatalf("%d frames, want %d", len(got), len(want))
			}
			for i := range want {
				if !bytes.Equal(got[i], want[i]) {
					t.Fatalf("frame %d differs from what encoding/json reads", i)
				}
			}
			if fr.scanned > len(tc.stream) {
				t.Errorf("scanned %d bytes for a stream of %d: bytes are scanned again on every read", fr.scanned, len(tc.stream))
			}
		})
	}
}

// BenchmarkFrameReaderBackslashes splits one watch event with a 1 MiB value,
// read in 1460-byte pieces: of backslashes, and of letters for comparison.
//
//	go test ./dyninformer -run '^$' -bench FrameReaderBackslashes -benchmem -count 6 | benchstat -col /value -
func BenchmarkFrameReaderBackslashes(b *testing.B) {
	for _, c := range []struct {
		name string
		c    byte
	}{{"backslashes", '\\'}, {"letters", 'a'}} {
		stream := backslashFrame(1<<20, c.c)
		b.Run("value="+c.name, func(b *testing.B) {
			b.SetBytes(int64(len(stream)))
			b.ReportAllocs()
			for b.Loop() {
				fr := jsonFramer{}.NewFrameReader(&oneByte{data: stream, n: 1460})
				if frames := readAll(b, fr); len(frames) != 1 {
					b.Fatalf("%d frames", len(frames))
				}
			}
		})
	}
}

func TestFrameReaderSplitsAtEveryChunkSize(t *testing.T) {
	stream, frames := watchStream()
	for chunk := 1; chunk <= 64; chunk++ {
		for _, bufSize := range []int{8, 100, 4096} {
			fr := jsonFramer{}.NewFrameReader(&oneByte{data: stream, n: chunk})
			var got []string
			for {
				frame, err := readFrame(fr, bufSize)
				if err == io.EOF {
					break
				}
				if err != nil {
					t.Fatalf("chunk %d, buffer %d: %v", chunk, bufSize, err)
				}
				got = append(got, string(frame))
			}
			if !reflect.DeepEqual(got, frames) {
				t.Fatalf("chunk %d, buffer %d: frames\n%q\nwant\n%q", chunk, bufSize, got, frames)
			}
		}
	}
}

func TestFrameReaderReportsCutAndBadStreams(t *testing.T) {
	for _, s := range []string{`{"type":"ADDED","object":{"a":"b`, `{"type":"ADDED"`, `"not an object"`, `{"a":1}]`} {
		fr := jsonFramer{}.NewFrameReader(io.NopCloser(strings.NewReader(s)))
		var err error
		for range 3 {
			if _, err = readFrame(fr, 64); err != nil {
				break
			}
		}
		if err == nil || err == io.EOF {
			t.Errorf("%s: err = %v, want an error", s, err)
		}
	}
}
