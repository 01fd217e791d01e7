package editdist

import "testing"

func TestLevenshtein(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		a, b string
		want int
	}{{"", "", 0}, {"", "abc", 3}, {"namespace", "namespace", 0}, {"namspace", "namespace", 1}, {"kitten", "sitting", 3}, {"deploymnets", "deployments", 2}} {
		if got := Levenshtein(tc.a, tc.b); got != tc.want {
			t.Errorf("Levenshtein(%q, %q) = %d, want %d", tc.a, tc.b, got, tc.want)
		}
	}
}
