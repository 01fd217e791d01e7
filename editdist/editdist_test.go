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

// Closest is the one rule of every "did you mean": case aside, at most two
// edits and fewer than the word has letters, the first of equal ones.
func TestClosest(t *testing.T) {
	choices := []string{"gt", "gte", "edges", "ConfigMap"}
	for word, want := range map[string]string{"gtt": "gt", "edge": "edges", "configmap": "ConfigMap", "x": "", "zzzz": ""} {
		if got := Closest(word, choices); got != want {
			t.Errorf("Closest(%q) = %q, want %q", word, got, want)
		}
	}
}
