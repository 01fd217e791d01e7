package rbac

import (
	"strings"
	"testing"
)

// The leader-election Role names one Lease, or a shard set's: NAME-0 to
// NAME-(N-1), nothing else.
func TestLeaseNames(t *testing.T) {
	for names, want := range map[string]bool{
		"dw": true, "dw-0": true, "dw-0,dw-1,dw-2": true,
		"": false, "dw,other": false, "dw-0,dw-2": false, "dw-1,dw-0": false,
		"dw-0,other-1": false, "dw-0,dw-1,dw-1": false, "*": false, "dw-0,dw-*": false,
	} {
		var list []string
		if names != "" {
			list = strings.Split(names, ",")
		}
		if got := leaseNames(list); got != want {
			t.Errorf("%q: %v, want %v", names, got, want)
		}
	}
}
