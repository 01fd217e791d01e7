package fieldpath

import (
	"slices"
	"strings"
	"testing"
)

func TestCheck(t *testing.T) {
	for _, tc := range []struct {
		path string
		ok   bool
	}{
		{"spec.replicas", true},
		{`metadata.labels.app\.kubernetes\.io/name`, true},
		{`spec.containers.#(name=="a").image`, true},
		{"", false},
		{"spec..replicas", false},
		{"spec.", false},
		{`spec\`, false},
		{"spec.containers.#(name", false},
		{"a)", false},
	} {
		t.Run(tc.path, func(t *testing.T) {
			if err := Check(tc.path); (err == nil) != tc.ok {
				t.Fatalf("Check(%q) = %v, want ok=%v", tc.path, err, tc.ok)
			}
		})
	}
}

// A kubectl user's leading dot is refused with the spelling that works.
func TestCheckLeadingDot(t *testing.T) {
	err := Check(".data.mode")
	if err == nil || !strings.Contains(err.Error(), "write data.mode") {
		t.Fatalf("Check(.data.mode) = %v, want it to say: write data.mode", err)
	}
}

func TestSplit(t *testing.T) {
	for _, tc := range []struct {
		path string
		keys []string
		ok   bool
	}{
		{"data", []string{"data"}, true},
		{`metadata.annotations.kubectl\.kubernetes\.io/last-applied-configuration`, []string{"metadata", "annotations", "kubectl.kubernetes.io/last-applied-configuration"}, true},
		{"spec.containers.#.image", nil, false},
		{"spec.*", nil, false},
		{"a..b", nil, false},
	} {
		t.Run(tc.path, func(t *testing.T) {
			keys, ok := Split(tc.path)
			if ok != tc.ok || !slices.Equal(keys, tc.keys) {
				t.Fatalf("Split(%q) = %q, %v; want %q, %v", tc.path, keys, ok, tc.keys, tc.ok)
			}
			if err := CheckPlain(tc.path); (err == nil) != tc.ok {
				t.Fatalf("CheckPlain(%q) = %v, want ok=%v", tc.path, err, tc.ok)
			}
		})
	}
}
