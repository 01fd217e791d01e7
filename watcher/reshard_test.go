package watcher

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/dynwatch/dynwatch/dyninformer"
	"github.com/dynwatch/dynwatch/event"
	"github.com/dynwatch/dynwatch/restart"
	"github.com/dynwatch/dynwatch/state"
)

// What an object that moved in without a record fires, by when it was
// created and last changed against its old owner's end.
func TestMovedIn(t *testing.T) {
	t.Parallel()
	end := time.Date(2026, 12, 1, 10, 0, 5, 700e6, time.UTC) // truncated: 10:00:05
	at := func(s int) time.Time { return time.Date(2026, 12, 1, 10, 0, s, 0, time.UTC) }
	tests := []struct {
		name              string
		created, modified time.Time
		ok                bool
		want              moved
	}{
		{"created after the end", at(9), at(9), true, movedAdd},
		{"created in the end's second", at(5), at(5), true, movedAdd},
		{"changed after the end", at(1), at(7), true, movedUpdate},
		{"changed in the end's second", at(1), at(5), true, movedUpdate},
		{"unchanged since before the end", at(1), at(4), true, movedNothing},
		{"no managedFields: counted as changed", at(1), time.Time{}, true, movedUpdate},
		{"the end not known", at(9), at(9), false, movedNothing},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := movedIn(tt.created, tt.modified, end, tt.ok, "", 0, false); got != tt.want {
				t.Errorf("moved %d, want %d", got, tt.want)
			}
		})
	}
}

// After a reshard, a listed object without a record is compared with its
// old owner's end as the Leases said (state.MovedFrom), or, for an old
// owner no Lease told of, with this file's own end: a replayed add, a
// replayed update from an empty record, or nothing.
func TestReshardKnown(t *testing.T) {
	t.Parallel()
	s, err := state.Open(filepath.Join(t.TempDir(), "s.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	res := state.Resource{Resource: "configmaps"}
	cms := event.Resource{Version: "v1", Resource: "configmaps", Kind: "ConfigMap", Namespaced: true}
	_ = s.Update(func(tx *state.Tx) error { return tx.SetBaseline(res.In("")) })
	if err := s.MarkStopped(); err != nil { // this file's own end: now
		t.Fatal(err)
	}
	if _, err := s.Reshard("0/3 by uid", func(string, string) bool { return true }); err != nil {
		t.Fatal(err)
	}
	own := time.Now()
	// Old owner 0's end was an hour ago (its Lease); old owner 1's is not
	// known: this file's own end stands for it.
	prev := state.MovedFrom{Count: 2}
	prev.SetEnd(0, own.Add(-time.Hour))
	if err := s.SetMovedFrom(prev, false); err != nil {
		t.Fatal(err)
	}
	uidOf := func(owner int) string {
		for i := 0; ; i++ {
			if uid := fmt.Sprintf("u-%d", i); dyninformer.NewShard(2, owner, false).Owns(uid, "") {
				return uid
			}
		}
	}
	ts := func(t time.Time) string { return t.UTC().Format(time.RFC3339) }
	obj := func(uid string, created, modified time.Time) *event.Event {
		return event.New(event.Add, cms, []byte(`{"metadata":{"name":"`+uid+`","namespace":"ns","uid":"`+uid+`","resourceVersion":"9",`+
			`"creationTimestamp":"`+ts(created)+`","managedFields":[{"manager":"m","time":"`+ts(modified)+`"}]},"data":{"k":"v"}}`), nil, own)
	}
	twoHours, halfHour := own.Add(-2*time.Hour), own.Add(-30*time.Minute)
	tests := []struct {
		name string
		ev   *event.Event
		want string // what it fires, "" for nothing
	}{
		{"from 0, changed after its end", obj(uidOf(0), twoHours, halfHour), "update"},
		{"from 0, created after its end", obj(uidOf(0), halfHour, halfHour), "add"},
		{"from 0, unchanged since before its end", obj(uidOf(0), twoHours, twoHours), ""},
		{"from 1, changed before this file's end", obj(uidOf(1), twoHours, halfHour), ""},
		{"from 1, changed after this file's end", obj(uidOf(1), twoHours, own.Add(time.Hour)), "update"},
	}
	l := &listing{res: cms, resharded: true, diff: true, baseline: true}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_ = s.View(func(tx *state.Tx) error {
				k, baseline, err := l.reshardKnown(tx, res, tt.ev)
				if err != nil {
					t.Fatal(err)
				}
				got := ""
				if !baseline {
					for _, r := range restart.Listed(cms, tt.ev, k, event.Replay, s.DigestKey(), own) {
						got += string(r.Type)
						if r.Type == event.Update && (string(r.OldObject) != "{}" || len(r.ChangedRecorded()) != 0) {
							t.Errorf("a moved-in update's old object %s, changed %v: want {} and none", r.OldObject, r.ChangedRecorded())
						}
					}
				}
				if got != tt.want {
					t.Errorf("fires %q, want %q", got, tt.want)
				}
				return nil
			})
		})
	}
}

// A mark adds to what times tell, never takes from it: above the mark an
// object changed (an add when created at or after the end), at or below it
// the times decide as without one.
func TestMovedInMarks(t *testing.T) {
	t.Parallel()
	end := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	before, after := end.Add(-time.Hour), end.Add(time.Minute)
	for _, tt := range []struct {
		name              string
		created, modified time.Time
		ok                bool
		rv                string
		mark              uint64
		marked            bool
		want              moved
	}{
		{"at the mark, times unchanged", before, before, true, "100", 100, true, movedNothing},
		{"below the mark, changed by its times", before, after, true, "99", 100, true, movedUpdate},
		{"above the mark, times unchanged (fields removed)", before, before, true, "101", 100, true, movedUpdate},
		{"above the mark, created after the end", after, after, true, "101", 100, true, movedAdd},
		{"above the mark, no end known", before, before, false, "101", 100, true, movedUpdate},
		{"at the mark, no end known", before, before, false, "100", 100, true, movedNothing},
		{"a resourceVersion not a number: times", before, before, true, "x", 100, true, movedNothing},
		{"no mark: times", before, before, true, "101", 0, false, movedNothing},
		{"compared as numbers", before, before, true, "1000", 999, true, movedUpdate},
	} {
		if got := movedIn(tt.created, tt.modified, end, tt.ok, tt.rv, tt.mark, tt.marked); got != tt.want {
			t.Errorf("%s: movedIn = %d, want %d", tt.name, got, tt.want)
		}
	}
}
