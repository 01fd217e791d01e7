//go:build linux

package state

import (
	"bytes"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"
)

// Killed (-9) while a delivery's mark lingers, the file holds the event's
// record and its delivery, with its id: the next start delivers it again,
// and nothing else is lost; once the mark landed (by itself, or riding in
// the next event's commit), a kill leaves it done.
func TestKillWhileAMarkLingersDeliversItAgain(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "state.db")
	s, c, ran := committerOn(t, path, &bytes.Buffer{}, &atomic.Int64{})
	r, rran := riderOn(t, s, c, 200*time.Millisecond)
	if err := submitWait(c, "2", []byte(`{"id":"u:2"}`)); err != nil {
		t.Fatal(err)
	}
	mark := later(r, 1)
	killed := filepath.Join(dir, "killed.db")
	copyFile(t, path, killed)                                          // what the disk holds at a kill -9 now
	if err := submitWait(c, "3", []byte(`{"id":"u:3"}`)); err != nil { // the mark rides in it
		t.Fatal(err)
	}
	if res := wait(t, "the mark", mark); res.err != nil {
		t.Fatal(res.err)
	}
	later2 := filepath.Join(dir, "later.db")
	copyFile(t, path, later2)
	c.Close()
	<-ran
	r.Close()
	<-rran
	s.Close()

	for _, tc := range []struct {
		file string
		want []string
		rv   string
	}{{killed, []string{`{"key":"u","payload":{"id":"u:2"}}`}, "2"}, {later2, []string{`{"key":"u","payload":{"id":"u:3"}}`}, "3"}} {
		k, err := Open(tc.file)
		if err != nil {
			t.Fatal(err)
		}
		p, err := k.PendingAfter("out", 0, 10)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, d := range p {
			got = append(got, string(pendingJSON(d.Key, d.JSON)))
		}
		if len(got) != len(tc.want) || got[0] != tc.want[0] {
			t.Errorf("%s: pending %v, want %v", filepath.Base(tc.file), got, tc.want)
		}
		if rv := recordedVersion(t, k); rv != tc.rv {
			t.Errorf("%s: record at %s, want %s", filepath.Base(tc.file), rv, tc.rv)
		}
		k.Close()
	}
}
