package state

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tidwall/gjson"
	bolt "go.etcd.io/bbolt"
)

func TestDocRoundTrip(t *testing.T) {
	obj := []byte(`{"metadata":{"name":"a","labels":{"app.kubernetes.io/name":"web"}},"spec":{"replicas":3,"containers":[{"image":"x:1"}],"paused":false}}`)
	paths := []string{"metadata.name", `metadata.labels.app\.kubernetes\.io/name`, "spec.replicas", "spec.containers.0.image", "spec.paused", "spec.missing", "spec.containers.#.image"}
	doc := Doc(Values(DigestKey("k"), obj, paths, nil))
	for _, p := range paths[:5] {
		if got, want := gjson.GetBytes(doc, p).Raw, gjson.GetBytes(obj, p).Raw; got != want {
			t.Errorf("%s: rebuilt %s, want %s (doc %s)", p, got, want, doc)
		}
	}
	if gjson.GetBytes(doc, "spec.missing").Exists() {
		t.Error("a missing path exists in the rebuilt doc")
	}
}

func TestStoreErrors(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "state.db")
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	err = s.Update(func(tx *Tx) error {
		if err := tx.Put(Resource{Group: "apps", Resource: "deployments"}, "u1", &Record{Name: "a", ResourceVersion: "1"}); err != nil {
			return err
		}
		_, err := tx.Enqueue("hook", "k", json.RawMessage(`{"id":"x"}`))
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	// A second opener is refused while the first holds the file.
	if _, err := Open(path); err == nil || !strings.Contains(err.Error(), "in use by another dynwatch process") {
		t.Errorf("second Open = %v", err)
	}
	s.Close()

	corrupt := filepath.Join(dir, "corrupt.db")
	if err := os.WriteFile(corrupt, []byte(strings.Repeat("not a database ", 1000)), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(corrupt); err == nil || !strings.Contains(err.Error(), "unreadable") || !strings.Contains(err.Error(), "--reset-state") || !strings.Contains(err.Error(), corrupt) {
		t.Errorf("corrupt Open = %v", err)
	}
	if recs, pend, err := Reset(corrupt); err != nil || recs != -1 || pend != -1 {
		t.Errorf("Reset(corrupt) = %d %d %v", recs, pend, err)
	}
	if recs, pend, err := Reset(path); err != nil || recs != 1 || pend != 1 {
		t.Errorf("Reset = %d records %d pending %v, want 1 1", recs, pend, err)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Error("Reset left the file")
	}
}

// Records of deleted objects and delivered events are removed, and bbolt reuses
// the pages they held: under steady churn the file stops growing.
func TestFileSizeUnderChurn(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	rec := &Record{Name: "obj", ResourceVersion: "1", Hash: "h", Values: map[string]json.RawMessage{"spec.x": json.RawMessage(`"` + strings.Repeat("v", 300) + `"`)}}
	payload := json.RawMessage(`{"id":"` + strings.Repeat("p", 1000) + `"}`)
	cycle := func(round int) int64 {
		var seqs []uint64
		for batch := range 100 {
			err := s.Update(func(tx *Tx) error {
				for i := range 100 {
					uid := fmt.Sprintf("r%d-b%d-%d", round, batch, i)
					if err := tx.Put(Resource{Group: "g", Resource: "r"}, uid, rec); err != nil {
						return err
					}
					seq, err := tx.Enqueue("hook", uid, payload)
					if err != nil {
						return err
					}
					seqs = append(seqs, seq)
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
		}
		// Every object is deleted again and every event delivered.
		for batch := range 100 {
			err := s.Update(func(tx *Tx) error {
				for i := range 100 {
					if err := tx.Delete(Resource{Group: "g", Resource: "r"}, fmt.Sprintf("r%d-b%d-%d", round, batch, i)); err != nil {
						return err
					}
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
		}
		if err := s.Done("hook", seqs...); err != nil {
			t.Fatal(err)
		}
		st, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		return st.Size()
	}
	var sizes []int64
	for round := range 6 {
		sizes = append(sizes, cycle(round))
	}
	t.Logf("file size after each round of 10 000 objects and events, all deleted again: %v", sizes)
	if sizes[1] <= 8<<20 {
		t.Fatalf("a round did not outgrow the initial 8 MiB file (%d bytes): the test measures nothing", sizes[1])
	}
	if last, early := sizes[len(sizes)-1], sizes[1]; last > early*3/2 {
		t.Errorf("the file kept growing under churn: %d bytes after round 2, %d after round 6", early, last)
	}
	pending, err := s.PendingActions()
	if err != nil || pending["hook"] != 0 {
		t.Errorf("pending after every delivery: %d, %v", pending["hook"], err)
	}
}

func TestOpenMissingDirectory(t *testing.T) {
	_, err := Open(filepath.Join(t.TempDir(), "no", "such", "dir", "state.db"))
	if err == nil || !strings.Contains(err.Error(), "check that its directory exists") {
		t.Errorf("Open = %v", err)
	}
}

// A file of format 1 (records per resource and namespace scope) is migrated
// when opened: its records are kept, per resource.
func TestMigrateFormat1(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		meta, _ := tx.CreateBucket(bucketMeta)
		_ = meta.Put(keyFormat, []byte("1"))
		objects, _ := tx.CreateBucket(bucketObjects)
		for _, scope := range []string{"/configmaps/a", "/configmaps/b", "apps/deployments/"} {
			b, _ := objects.CreateBucket([]byte(scope))
			_ = b.Put([]byte("uid"+scope), []byte(`{"name":"x","rv":"1","hash":"h"}`))
		}
		return nil
	})
	db.Close()
	if err != nil {
		t.Fatal(err)
	}
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	err = s.View(func(tx *Tx) error {
		if got := fmt.Sprint(tx.Resources()); got != "[/configmaps apps/deployments]" {
			t.Errorf("resources after migration: %s", got)
		}
		n := 0
		if err := tx.ForEach(Resource{Resource: "configmaps"}, func(string, *Record) error { n++; return nil }); err != nil {
			return err
		}
		if n != 2 {
			t.Errorf("%d configmap records, want 2", n)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestPendingJSONKeepsThePayloadAsItIs: the queue entry decodes as a Pending
// does, and keeps the payload's bytes exactly (encoding/json would escape <, >
// and & in it, so a delivery after a restart would differ from the live one).
func TestPendingJSONKeepsThePayloadAsItIs(t *testing.T) {
	for _, c := range []struct{ key, payload string }{
		{"configmaps.v1/ns/a", `{"id":"x","object":{"a":"<b> & é"}}`},
		{"k \"quoted\" <html> é", `{}`},
	} {
		var p Pending
		if err := json.Unmarshal(pendingJSON(c.key, []byte(c.payload)), &p); err != nil {
			t.Fatal(err)
		}
		if p.Key != c.key || string(p.JSON) != c.payload {
			t.Errorf("decoded %q %s, want %q %s", p.Key, p.JSON, c.key, c.payload)
		}
	}
}

// TestPutSkipsAnUnchangedRecord: writing the record a uid already has dirties
// no page (a restart that finds objects unchanged writes nothing for them).
func TestPutSkipsAnUnchangedRecord(t *testing.T) {
	s, err := Open(filepath.Join(t.TempDir(), "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	rec := func(rv string) *Record {
		return &Record{Namespace: "ns", Name: "a", ResourceVersion: rv, Hash: "h", Values: map[string]json.RawMessage{"spec.x": json.RawMessage(`1`)}}
	}
	put := func(r *Record) int64 {
		st := s.db.Stats()
		before := st.TxStats.GetWrite()
		if err := s.Update(func(tx *Tx) error { return tx.Put(Resource{Group: "apps", Resource: "deployments"}, "u1", r) }); err != nil {
			t.Fatal(err)
		}
		st = s.db.Stats()
		return st.TxStats.GetWrite() - before
	}
	put(rec("1"))
	same, changed := put(rec("1")), put(rec("2"))
	if same >= changed {
		t.Errorf("the same record wrote %d pages, a changed one %d: the same should write fewer", same, changed)
	}
	var got *Record
	if err := s.View(func(tx *Tx) (err error) {
		got, err = tx.Get(Resource{Group: "apps", Resource: "deployments"}, "u1")
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if got == nil || got.ResourceVersion != "2" {
		t.Errorf("record = %+v, want version 2", got)
	}
}
