package state

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// BenchmarkEvent is what one event costs the state file, its delivery's done
// mark included, as the watcher makes them: the event's commit (its record and
// its outbox entry), then, once the delivery is delivered, the mark that takes
// the entry out again. The file holds 10 000 records, as with 10 000 objects
// watched. Events come as the informers hand them over, never waiting for a
// commit: rate=100/s one every 10 ms, rate=250/s one every 4 ms (about what
// four writers updating through the API server as fast as they go make on
// this machine), burst as fast as they are submitted. Reported with the
// time: the process's CPU (user and system: most of it is the kernel's
// fdatasync) and the transactions per event, each of them two fdatasyncs (bbolt syncs the
// data pages, then the meta page), the page writes (pwrite calls) per
// transaction, and how long a done mark waits on average before it is on
// disk (the window in which a crash makes its delivery happen again).
func BenchmarkEvent(b *testing.B) {
	payload := []byte(`{"id":"u:1:update","type":"update","object":{"kind":"Deployment","metadata":{"name":"api"},"data":"` + strings.Repeat("x", 2000) + `"}}`)
	res := Resource{Group: "apps", Resource: "deployments"}
	for _, pace := range []string{"100/s", "250/s", "burst"} {
		b.Run("rate="+pace, func(b *testing.B) {
			s, err := Open(filepath.Join(b.TempDir(), "state.db"))
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			if err := s.Update(func(tx *Tx) error {
				for i := range 10000 {
					if err := tx.Put(res, fmt.Sprint("u-", i), benchRecord(i, 0)); err != nil {
						return err
					}
				}
				return nil
			}); err != nil {
				b.Fatal(err)
			}
			commits, marks, markDone := benchCommitters(s)
			go commits.Run()
			go marks.Run()
			defer commits.Close()
			defer marks.Close()
			// The queue: delivers each committed event and marks it done.
			delivered := make(chan uint64, b.N)
			queue := make(chan struct{})
			var markWait atomic.Int64 // from a delivery's mark to its landing, summed
			go func() {
				for seq := range delivered {
					at := time.Now()
					markDone(seq, func() { markWait.Add(int64(time.Since(at))) })
				}
				close(queue)
			}()
			tx0, cpu0, w0 := txID(b, s), cpuNow(), pageWrites(s)
			b.ReportAllocs()
			// A counted loop, not b.Loop: the flushes below, which wait for
			// what is still queued, are part of what is measured.
			b.ResetTimer()
			for i := 1; i <= b.N; i++ {
				uid := fmt.Sprint("u-", i%10000)
				var seq uint64
				commits.Submit(len(payload), func(tx *Tx) error {
					if err := tx.Put(res, uid, benchRecord(i%10000, i)); err != nil {
						return err
					}
					seq, err = tx.Enqueue("out", uid, payload)
					return err
				}, func(err error) {
					if err != nil {
						b.Error(err)
					}
					delivered <- seq
				})
				switch pace {
				case "100/s":
					time.Sleep(10 * time.Millisecond)
				case "250/s":
					time.Sleep(4 * time.Millisecond)
				}
			}
			commits.Flush()
			close(delivered)
			<-queue
			marks.Flush()
			b.StopTimer()
			txs := txID(b, s) - tx0
			b.ReportMetric(float64(txs)/float64(b.N), "tx/op")
			b.ReportMetric(float64(pageWrites(s)-w0)/float64(max(txs, 1)), "writes/tx")
			b.ReportMetric(float64(cpuNow()-cpu0)/float64(b.N), "cpu-ns/op")
			b.ReportMetric(float64(markWait.Load())/float64(b.N)/1e6, "mark-ms")
			if n, err := s.PendingActions(); err != nil || n["out"] != 0 {
				b.Fatalf("%d deliveries not marked done (%v)", n["out"], err)
			}
		})
	}
}

func benchRecord(i, rv int) *Record {
	return &Record{Namespace: "prod", Name: fmt.Sprint("api-", i), ResourceVersion: fmt.Sprint(rv), Hash: "0123456789abcdef0123456789abcdef",
		Values: map[string]json.RawMessage{"metadata.name": json.RawMessage(fmt.Sprintf("%q", fmt.Sprint("api-", i))), "spec.replicas": json.RawMessage("3")}}
}

// txID is the id of the file's last committed transaction: one more per commit.
func txID(b *testing.B, s *Store) int {
	b.Helper()
	var id int
	if err := s.View(func(tx *Tx) error { id = tx.tx.ID(); return nil }); err != nil {
		b.Fatal(err)
	}
	return id
}

// cpuNow is the CPU the process has spent, user and system.
func cpuNow() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// pageWrites counts the file's page writes so far.
func pageWrites(s *Store) int64 {
	st := s.db.Stats()
	return st.TxStats.GetWrite()
}
