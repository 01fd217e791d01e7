package config

import "testing"

// StatefulSet names with digits and dashes: the ordinal is what follows the
// last dash.
func TestReviewShardIndexFromPodName(t *testing.T) {
	s := &Shards{Count: 12, By: ShardByUID}
	for pod, want := range map[string]int{"dynwatch-10": 10, "my-dw-2-1": 1, "dw2-0": 0, "a-11": 11} {
		if got, err := s.ShardIndex(pod); err != nil || got != want {
			t.Errorf("%s: %d, %v; want %d", pod, got, err, want)
		}
	}
	for _, pod := range []string{"dynwatch", "dynwatch-", "dynwatch-01", "dynwatch-+1", "dynwatch-7d9f8b6c5-24567", "dynwatch-12", "7"} {
		if got, err := s.ShardIndex(pod); err == nil {
			t.Errorf("%s: shard %d, want an error", pod, got)
		}
	}
}
