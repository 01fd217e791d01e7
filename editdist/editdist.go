// Package editdist measures how far apart two words are, for the "did you
// mean" hints of config checks and of discovery's resource names.
//
// It imports nothing of dynwatch.
package editdist

import "strings"

// Levenshtein is the edit distance between a and b: the fewest single-byte
// insertions, deletions and substitutions that turn a into b.
func Levenshtein(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// Closest is the choice nearest to word, compared without case, when it is at
// most two edits away and fewer edits than word has letters: the one rule of
// every "did you mean". The first of equally near choices wins; "" when none
// is near.
func Closest(word string, choices []string) string {
	best, bestD := "", 3
	for _, c := range choices {
		if d := Levenshtein(strings.ToLower(word), strings.ToLower(c)); d < bestD && d < len(word) {
			best, bestD = c, d
		}
	}
	return best
}
