package state

import (
	"fmt"
	"path/filepath"
	"testing"
)

// BenchmarkCommit records one object and queues one delivery per event through
// the group committer, as the watcher does for each event with state; one op is
// one event. alone: each waits for its commit (one transaction per event);
// batched: events come faster than commits, which then take many at once.
// Every commit is fsynced: batched shares one fsync among the events of a batch.
func BenchmarkCommit(b *testing.B) {
	payload := []byte(`{"id":"u:1:update","type":"update","object":{"kind":"Deployment","metadata":{"name":"api"},"spec":{"replicas":3}}}`)
	for _, mode := range []string{"alone", "batched"} {
		b.Run("mode="+mode, func(b *testing.B) {
			s, err := Open(filepath.Join(b.TempDir(), "state.db"))
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			c := NewCommitter(s, CommitterOptions{})
			go c.Run()
			defer c.Close()
			b.ReportAllocs()
			// A counted loop, not b.Loop: the Flush below, which waits for
			// the commits still queued, is part of what is measured.
			b.ResetTimer()
			for i := 1; i <= b.N; i++ {
				uid := fmt.Sprint("u-", i%1000)
				rec := &Record{Namespace: "prod", Name: uid, ResourceVersion: fmt.Sprint(i), Hash: "0123456789abcdef0123456789abcdef"}
				done := make(chan error, 1)
				c.Submit(0, func(tx *Tx) error {
					if err := tx.Put(Resource{Group: "apps", Resource: "deployments"}, uid, rec); err != nil {
						return err
					}
					_, err := tx.Enqueue("out", uid, payload)
					return err
				}, func(err error) { done <- err })
				if mode == "alone" {
					if err := <-done; err != nil {
						b.Fatal(err)
					}
				}
			}
			c.Flush()
			b.StopTimer()
		})
	}
}
