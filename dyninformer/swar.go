package dyninformer

import (
	"encoding/binary"
	"math/bits"
)

// Bytes of a word, for looking at eight bytes at a time.
const (
	ones  = 0x0101010101010101
	highs = 0x8080808080808080
)

// stringStop returns the index of the first '"' or '\\' in b at or after i,
// or len(b): where a string that starts before i ends or has an escape. It
// reads eight bytes at a time (a zero byte of x^('"'*ones) is a quote; the
// lowest byte the borrow trick flags is always a true one, so the first
// flagged byte of either word is the first stop).
func stringStop(b []byte, i int) int {
	for ; i+8 <= len(b); i += 8 {
		x := binary.LittleEndian.Uint64(b[i:])
		q, s := x^('"'*ones), x^('\\'*ones)
		if m := ((q - ones) &^ q) | ((s - ones) &^ s); m&highs != 0 {
			return i + bits.TrailingZeros64(m&highs)/8
		}
	}
	for ; i < len(b); i++ {
		if b[i] == '"' || b[i] == '\\' {
			return i
		}
	}
	return len(b)
}
