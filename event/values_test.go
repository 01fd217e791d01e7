package event

import (
	"slices"
	"testing"
)

// recorded is a Recorded of values kept in clear.
type recorded map[string]string

func (r recorded) Same(path, raw string) bool { return r[path] == raw }

func (r recorded) Paths() []string {
	var out []string
	for p := range r {
		out = append(out, p)
	}
	return out
}

// A replayed update compares with what was recorded, path by path, not with
// its old object; a live update compares its objects.
func TestDiffersReadsTheRecordOnReplay(t *testing.T) {
	t.Parallel()
	ev := &Event{Type: Update, Object: []byte(`{"a":1,"b":2,"c":3}`), OldObject: []byte(`{"a":1,"b":2,"c":3}`)}
	if ev.Differs("a") || ev.ChangedRecorded() != nil {
		t.Error("a live update with equal objects differs")
	}
	ev.Recorded = recorded{"a": "1", "b": "5", "c": "3"}
	if !ev.Differs("b") || ev.Differs("a") {
		t.Error("a replayed update does not compare with its record")
	}
	if got := ev.ChangedRecorded(); !slices.Equal(got, []string{"b"}) {
		t.Errorf("changed %v, want [b]", got)
	}
}
