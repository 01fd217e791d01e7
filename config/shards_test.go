package config

import (
	"strings"
	"testing"
)

func TestShards(t *testing.T) {
	const head = "apiVersion: dynwatch/v1alpha1\nactions: [{name: out, log: {}}]\nrules: [{name: r, resources: [{kind: ConfigMap}], actions: [out]}]\n"
	for _, tc := range []struct {
		name, yaml, want string
	}{
		{"defaults", "shards: {count: 2}", ""},
		{"count", "shards: {count: 0}", "shards.count: must be at least 1 (got 0)"},
		{"index", "shards: {count: 2, index: 2}", "shards.index: must be from 0 to count-1 (1); got 2"},
		{"negative index", "shards: {count: 2, index: -1}", "shards.index: must be from 0 to count-1"},
		{"by", "shards: {count: 2, by: name}", `shards.by: unknown shard key "name" (want uid or namespace)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := Parse("t.yaml", []byte(head+tc.yaml+"\n"))
			switch {
			case tc.want == "" && err != nil:
				t.Fatal(err)
			case tc.want == "":
				if f.Config.Shards.By != ShardByUID {
					t.Errorf("by = %q, want uid", f.Config.Shards.By)
				}
			case err == nil || !strings.Contains(err.Error(), tc.want):
				t.Errorf("err = %v, want %q", err, tc.want)
			}
		})
	}
}

func TestShardIndex(t *testing.T) {
	one := 1
	for _, tc := range []struct {
		name  string
		s     Shards
		pod   string
		want  int
		error string
	}{
		{"from the file", Shards{Count: 3, Index: &one}, "dynwatch-2", 1, ""},
		{"ordinal", Shards{Count: 3}, "dynwatch-2", 2, ""},
		{"ordinal 0", Shards{Count: 3}, "my-dynwatch-0", 0, ""},
		{"no pod", Shards{Count: 3}, "", 0, "$POD_NAME is empty"},
		{"no ordinal", Shards{Count: 3}, "dynwatch-abc", 0, "does not end in a StatefulSet ordinal"},
		{"no dash", Shards{Count: 3}, "dynwatch", 0, "does not end in a StatefulSet ordinal"},
		{"leading zero", Shards{Count: 3}, "dynwatch-01", 0, "does not end in a StatefulSet ordinal"},
		{"past count", Shards{Count: 3}, "dynwatch-3", 0, "is shard 3 but shards.count is 3"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.s.ShardIndex(tc.pod)
			if tc.error != "" {
				if err == nil || !strings.Contains(err.Error(), tc.error) {
					t.Errorf("err = %v, want %q", err, tc.error)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Errorf("= %d, %v; want %d", got, err, tc.want)
			}
		})
	}
}

// StatefulSet names with digits and dashes: the ordinal is what follows the
// last dash.
func TestShardIndexFromPodName(t *testing.T) {
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
