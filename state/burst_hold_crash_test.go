//go:build linux

package state

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// crashReviewUIDs are the objects the flow updates, change i updating
// crashReviewUIDs[i%len].
var crashReviewUIDs = []string{"a", "b", "c", "d"}

var crashReviewRes = Resource{Group: "g", Resource: "r"}

// crashReviewCopy is a copy of the state file, as a kill -9 leaves it, and
// what was known when it was taken: every change up to acked had landed
// (its after got nil) before the copy began; no change after submitted had
// been submitted when it ended.
type crashReviewCopy struct {
	file      string
	when      string
	acked     int
	submitted int
}

// A kill -9 while a sustained flow's changes are held (BurstHold), while a
// commit runs, and while the file refuses commits (full disk), leaves a file
// that opens, whose deliveries are exactly the changes 1..k for some k (in
// submission order, none later without every earlier one), whose records
// are each object's last version among those k (every record's version has
// its delivery, and no delivery is of a version its record has not
// reached), and that holds at least every change that had landed.
func TestBurstHoldCrashKeepsChangesWholeAndInOrder(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "state.db")
	s, c, ran := committerWith(t, path, &bytes.Buffer{}, CommitterOptions{Gather: 10 * time.Millisecond, BurstHold: 80 * time.Millisecond})
	closed := false
	defer func() {
		if !closed {
			c.Close()
			<-ran
			_ = s.Close()
		}
	}()

	var (
		submitted atomic.Int64 // changes submitted so far (1..submitted)
		mu        sync.Mutex
		acked     = map[int]bool{}
		ackedTo   int // every change up to it landed
		ackErr    error
	)
	ackedPrefix := func() int {
		mu.Lock()
		defer mu.Unlock()
		return ackedTo
	}
	change := func(i int) {
		uid := crashReviewUIDs[i%len(crashReviewUIDs)]
		rv := strconv.Itoa(i)
		payload := []byte(fmt.Sprintf(`{"uid":%q,"rv":%q}`, uid, rv))
		c.Submit(len(payload), func(tx *Tx) error {
			if err := tx.Put(crashReviewRes, uid, &Record{Name: uid, ResourceVersion: rv}); err != nil {
				return err
			}
			_, err := tx.Enqueue("out", uid, payload)
			return err
		}, func(err error) {
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				if ackErr == nil {
					ackErr = fmt.Errorf("change %d: %w", i, err)
				}
				return
			}
			acked[i] = true
			for acked[ackedTo+1] {
				delete(acked, ackedTo+1)
				ackedTo++
			}
		})
		submitted.Store(int64(i))
	}

	stop := make(chan struct{})
	flowDone := make(chan struct{})
	go func() {
		defer close(flowDone)
		for i := 1; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			change(i)
			time.Sleep(2 * time.Millisecond)
		}
	}()
	defer func() {
		select {
		case <-stop:
		default:
			close(stop)
		}
		<-flowDone
	}()

	var copies []crashReviewCopy
	// inMemory: while the disk is "full" (RLIMIT_FSIZE), copyFile's
	// copy_file_range fails at the limit; the file is read whole into
	// memory then (the same moment's bytes) and written out after the
	// limit is lifted.
	inMemory := false
	held := map[string][]byte{}
	snap := func(when string) {
		a := ackedPrefix()
		file := filepath.Join(dir, fmt.Sprintf("killed-%02d.db", len(copies)))
		if inMemory {
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			held[file] = b
		} else {
			copyFile(t, path, file)
		}
		copies = append(copies, crashReviewCopy{file: file, when: when, acked: a, submitted: int(submitted.Load())})
	}
	// state reports whether a change waits held past now, and whether Run
	// is applying a batch.
	state := func() (held, applying bool) {
		c.mu.Lock()
		defer c.mu.Unlock()
		held = len(c.waiting) > 0 && c.waiting[0].hold.After(time.Now())
		return held, c.applying
	}
	// snapWhen copies the file once cond holds (polled), within 2s.
	var heldCopies, applyingCopies int
	snapWhen := func(when string, cond func(held, applying bool) bool) bool {
		deadline := time.Now().Add(2 * time.Second)
		for time.Now().Before(deadline) {
			if h, a := state(); cond(h, a) {
				snap(when)
				if h {
					heldCopies++
				}
				if a {
					applyingCopies++
				}
				return true
			}
			time.Sleep(50 * time.Microsecond)
		}
		return false
	}

	// Let BurstHold take hold: sustainedN changes at 500 a second.
	for submitted.Load() < 2*sustainedN {
		time.Sleep(5 * time.Millisecond)
	}
	for j := 0; j < 12; j++ {
		snapWhen("held", func(h, a bool) bool { return h && !a })
		snapWhen("committing", func(h, a bool) bool { return a })
		snapWhen("committing with more held", func(h, a bool) bool { return a && h })
		time.Sleep(7 * time.Millisecond)
	}
	// A burst of copies, back to back, whatever the moment.
	for j := 0; j < 10; j++ {
		snap("any")
	}

	// The file refuses commits (full disk) while the flow goes on.
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	inMemory = true
	lift := fillDisk(t, path)
	refusing := false
	for deadline := time.Now().Add(3 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		if c.Err() != nil {
			refusing = true
			break
		}
	}
	if refusing {
		for j := 0; j < 4; j++ {
			snap("refusing")
			time.Sleep(40 * time.Millisecond)
		}
		snapWhen("refusing, retrying", func(h, a bool) bool { return a })
	} else {
		t.Log("the file never refused a commit while full; no copy while refusing")
	}
	lift()
	inMemory = false
	for file, b := range held {
		if err := os.WriteFile(file, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if st, err := os.Stat(path); err == nil && st.Size() > fi.Size() {
		t.Errorf("the file grew past the full disk: %d > %d", st.Size(), fi.Size())
	}
	for deadline := time.Now().Add(5 * time.Second); c.Err() != nil; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("commits still refused after the disk was freed: %v", c.Err())
		}
	}
	for j := 0; j < 4; j++ {
		snapWhen("held after refusal", func(h, a bool) bool { return h && !a })
		snapWhen("committing after refusal", func(h, a bool) bool { return a })
	}

	close(stop)
	<-flowDone
	n := int(submitted.Load())
	c.Flush()
	snap("flushed")
	if got := ackedPrefix(); got != n {
		mu.Lock()
		e := ackErr
		mu.Unlock()
		t.Fatalf("after Flush %d of %d changes landed (%v)", got, n, e)
	}
	c.Close()
	<-ran
	_ = s.Close()
	closed = true
	mu.Lock()
	if ackErr != nil {
		t.Errorf("a change failed: %v", ackErr)
	}
	mu.Unlock()
	t.Logf("%d changes, %d copies (%d while held, %d while a commit ran)", n, len(copies), heldCopies, applyingCopies)
	if heldCopies == 0 || applyingCopies == 0 {
		t.Errorf("no copy while held (%d) or while committing (%d)", heldCopies, applyingCopies)
	}

	for _, cp := range copies {
		crashReviewCheck(t, cp)
	}
	if last := copies[len(copies)-1]; last.acked != n {
		t.Errorf("flushed copy taken with %d of %d landed", last.acked, n)
	}
}

// crashReviewCheck opens cp and checks that it holds changes 1..k whole,
// for some k with cp.acked <= k <= cp.submitted.
func crashReviewCheck(t *testing.T, cp crashReviewCopy) {
	t.Helper()
	name := filepath.Base(cp.file) + " (" + cp.when + ")"
	k, err := Open(cp.file)
	if err != nil {
		t.Errorf("%s: does not open: %v", name, err)
		return
	}
	defer k.Close()
	p, err := k.PendingAfter("out", 0, 1<<30)
	if err != nil {
		t.Errorf("%s: outbox: %v", name, err)
		return
	}
	// Deliveries, in sequence order: versions 1, 2, ..., len(p).
	for j, d := range p {
		var v struct{ UID, RV string }
		if err := json.Unmarshal(d.JSON, &v); err != nil {
			t.Errorf("%s: delivery %d: %v", name, d.Seq, err)
			return
		}
		want := j + 1
		if v.RV != strconv.Itoa(want) || v.UID != crashReviewUIDs[want%len(crashReviewUIDs)] || d.Key != v.UID || d.Seq != uint64(want) {
			t.Errorf("%s: delivery #%d (seq %d) is %s of %s (key %s), want version %d: not a prefix of the submitted order", name, j+1, d.Seq, v.RV, v.UID, d.Key, want)
			return
		}
	}
	last := len(p)
	if testing.Verbose() {
		t.Logf("%s: changes 1..%d (landed before: %d, submitted after: %d)", name, last, cp.acked, cp.submitted)
	}
	if last < cp.acked || last > cp.submitted {
		t.Errorf("%s: holds changes 1..%d; %d had landed before the copy, %d were submitted after it", name, last, cp.acked, cp.submitted)
	}
	// Records: each object's last version among 1..last, none past it.
	recs := map[string]string{}
	if err := k.View(func(tx *Tx) error {
		return tx.ForEach(crashReviewRes, func(uid string, r *Record) error {
			if uid != "u" { // committerWith's
				recs[uid] = r.ResourceVersion
			}
			return nil
		})
	}); err != nil {
		t.Errorf("%s: records: %v", name, err)
		return
	}
	for x, uid := range crashReviewUIDs {
		want := ""
		for i := last; i >= 1; i-- {
			if i%len(crashReviewUIDs) == x {
				want = strconv.Itoa(i)
				break
			}
		}
		if got := recs[uid]; got != want {
			t.Errorf("%s: record of %s at version %q, want %q (its last delivery's; deliveries 1..%d)", name, uid, got, want, last)
		}
		delete(recs, uid)
	}
	for uid, rv := range recs {
		t.Errorf("%s: unexpected record %s at %s", name, uid, rv)
	}
}
