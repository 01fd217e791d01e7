package dyninformer

import (
	"errors"
	"fmt"
	"math/rand"
	"slices"
	"testing"

	"k8s.io/client-go/tools/cache"
)

// Review of 6d7ebea (ProcessBatch: the FIFO pops in batches) and ce6dcd0
// (hasSynced reads the FIFO's synced channel). These drive client-go's RealFIFO
// by hand, as the controller's processLoop does (PopBatch with applyBatch and
// apply), so that what each pop hands over, and when the synced channel
// closes, is seen exactly, not raced for.

// controllerFIFO is the FIFO newController makes, for either AtomicFIFO setting.
func controllerFIFO(atomicFIFO bool, store cache.Store) *cache.RealFIFO {
	opts := cache.RealFIFOOptions{Name: "controller-test", KeyFunction: cache.MetaNamespaceKeyFunc}
	if atomicFIFO {
		opts.AtomicEvents, opts.EmitDeltaTypeBookmark, opts.UnlockWhileProcessing = true, true, true
	} else {
		opts.KnownObjects = store
	}
	return cache.NewRealFIFOWithOptions(opts)
}

func closed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// pop is one PopBatch as processLoop calls it; it reports how many deltas it
// handed over, whether as a batch, and the initial flag it was given.
type pop struct {
	n       int
	batch   bool
	initial bool
	keys    []string
}

func popOnce(t *testing.T, f *cache.RealFIFO, p *applier, during func(initial bool)) (pop, error) {
	t.Helper()
	var got pop
	err := f.PopBatch(func(ds []cache.Delta, initial bool) error {
		got = pop{n: len(ds), batch: true, initial: initial}
		for _, d := range ds {
			k, _ := cache.DeletionHandlingMetaNamespaceKeyFunc(d.Object)
			got.keys = append(got.keys, k)
		}
		during(initial)
		return p.applyBatch(ds, initial)
	}, func(obj any, initial bool) error {
		got = pop{n: 1, initial: initial}
		during(initial)
		return p.apply(obj, initial)
	})
	return got, err
}

// TestSyncedClosesRightAfterTheLastInitialObject: with PopBatch, with
// and without AtomicFIFO (one ReplacedAll, or 2500 Replaced deltas popped in
// batches of up to 1000), watch events queued behind the list: no pop mixes
// initial and later deltas, the synced channel is open during every pop of the
// initial list (so a handler is never told "synced" before it was handed the
// last initial object), and it is closed as soon as that pop returns, before
// the next one (a regression test: it holds).
func TestSyncedClosesRightAfterTheLastInitialObject(t *testing.T) {
	t.Parallel()
	for _, atomicFIFO := range []bool{true, false} {
		t.Run(fmt.Sprintf("AtomicFIFO=%v", atomicFIFO), func(t *testing.T) {
			const n = 2500
			var told calls
			store := cache.NewStore(cache.DeletionHandlingMetaNamespaceKeyFunc)
			p := &applier{store: store, h: told.handler()}
			f := controllerFIFO(atomicFIFO, store)
			objs := make([]any, n)
			for i := range n {
				objs[i] = testObject(t, fmt.Sprintf("ns/o%04d", i), fmt.Sprintf("u%d", i), "1")
			}
			if err := f.Replace(objs, "10"); err != nil {
				t.Fatal(err)
			}
			for i := range 3 {
				if err := f.Add(testObject(t, fmt.Sprintf("ns/w%d", i), "uw", "11")); err != nil {
					t.Fatal(err)
				}
			}
			if closed(f.HasSyncedChecker().Done()) {
				t.Fatal("synced before anything was popped")
			}
			initialTold, biggest := 0, 0
			for len(told.got()) < n+3 {
				pp, err := popOnce(t, f, p, func(initial bool) {
					if initial && closed(f.HasSyncedChecker().Done()) {
						t.Errorf("synced while the initial list is being handed over (%d of %d told)", len(told.got()), n)
					}
				})
				if err != nil {
					t.Fatal(err)
				}
				lines := told.got()
				if pp.initial {
					initialTold = len(lines)
					for _, l := range lines {
						if !contains(l, "initial=true") {
							t.Fatalf("an initial-list pop told %q", l)
						}
					}
				} else if initialTold != n {
					t.Fatalf("a pop with initial=false after only %d of %d initial objects", initialTold, n)
				}
				if syncedNow := closed(f.HasSyncedChecker().Done()); syncedNow != (initialTold == n) {
					t.Fatalf("after a pop: synced %v with %d of %d initial objects told", syncedNow, initialTold, n)
				}
				if pp.n > 1000 {
					t.Fatalf("a batch of %d", pp.n)
				}
				biggest = max(biggest, pp.n)
			}
			if !atomicFIFO && biggest != 1000 {
				t.Fatalf("the initial list was not popped in batches of 1000 (biggest %d)", biggest)
			}
			lines := told.got()
			for _, l := range lines[n:] {
				if !contains(l, "initial=false") {
					t.Fatalf("a watch add told %q", l)
				}
			}
		})
	}
}

func contains(s, sub string) bool { return len(s) >= len(sub) && slices.Contains(splitWords(s), sub) }

func splitWords(s string) []string {
	var out []string
	start := 0
	for i := 0; i <= len(s); i++ {
		if i == len(s) || s[i] == ' ' {
			out = append(out, s[start:i])
			start = i + 1
		}
	}
	return out
}

// TestAddBeforeAnyReplace: a FIFO whose first change is an Add (the
// reflector never does that: it lists first) is synced as soon as the Add is
// queued, before the handler is handed it, and the Add and a later list are
// not initial. That is what the shared informer's registration reported too
// (its upstream, this FIFO, synced; nothing initial counted), so it holds; only
// hasSynced's doc ("was handed a change before any list") says handed where
// the FIFO means queued.
func TestAddBeforeAnyReplace(t *testing.T) {
	t.Parallel()
	for _, atomicFIFO := range []bool{true, false} {
		t.Run(fmt.Sprintf("AtomicFIFO=%v", atomicFIFO), func(t *testing.T) {
			var told calls
			store := cache.NewStore(cache.DeletionHandlingMetaNamespaceKeyFunc)
			p := &applier{store: store, h: told.handler()}
			f := controllerFIFO(atomicFIFO, store)
			if err := f.Add(testObject(t, "ns/x", "ux", "5")); err != nil {
				t.Fatal(err)
			}
			if !closed(f.HasSyncedChecker().Done()) {
				t.Fatal("not synced after an Add before any list (the FIFO's own rule)")
			}
			if err := f.Replace([]any{testObject(t, "ns/x", "ux", "6"), testObject(t, "ns/y", "uy", "6")}, "6"); err != nil {
				t.Fatal(err)
			}
			for len(told.got()) < 3 {
				if _, err := popOnce(t, f, p, func(initial bool) {
					if initial {
						t.Error("a pop with initial=true after an Add came first")
					}
				}); err != nil {
					t.Fatal(err)
				}
			}
			want := []string{"add ns/x@5#ux initial=false", "update ns/x@5#ux -> ns/x@6#ux", "add ns/y@6#uy initial=false"}
			if got := told.got(); !slices.Equal(got, want) {
				t.Fatalf("calls:\n got %q\nwant %q", got, want)
			}
		})
	}
}

// TestBatchesTellWhatPopTells: the same random changes (adds, updates,
// deletes, names made again, relists with tombstones, resyncs) through
// PopBatch with applyBatch and through Pop with apply: the handler is told the
// same, in the same order, and no batch holds two deltas of one object
// (a regression test: it holds).
func TestBatchesTellWhatPopTells(t *testing.T) {
	t.Parallel()
	for _, atomicFIFO := range []bool{true, false} {
		t.Run(fmt.Sprintf("AtomicFIFO=%v", atomicFIFO), func(t *testing.T) {
			type side struct {
				told  calls
				store cache.Store
				p     *applier
				f     *cache.RealFIFO
			}
			mk := func() *side {
				s := &side{store: cache.NewStore(cache.DeletionHandlingMetaNamespaceKeyFunc)}
				s.p = &applier{store: s.store, h: s.told.handler()}
				s.f = controllerFIFO(atomicFIFO, s.store)
				return s
			}
			batched, single := mk(), mk()
			batches := 0
			rng := rand.New(rand.NewSource(7))
			rv := 100
			live := map[string]string{}
			var initial []any
			for i := range 40 {
				initial = append(initial, testObject(t, fmt.Sprintf("ns/o%d", i), fmt.Sprintf("u%d", i), "1"))
				live[fmt.Sprintf("ns/o%d", i)] = fmt.Sprintf("u%d", i)
			}
			both := func(do func(f *cache.RealFIFO) error) {
				if err := do(batched.f); err != nil {
					t.Fatal(err)
				}
				if err := do(single.f); err != nil {
					t.Fatal(err)
				}
			}
			both(func(f *cache.RealFIFO) error { return f.Replace(initial, "10") })
			// Closed, a FIFO still takes changes; its pops return ErrFIFOClosed
			// once it is empty, which is how a round is drained.
			batched.f.Close()
			single.f.Close()
			for round := range 30 {
				for range 60 {
					rv++
					key := fmt.Sprintf("ns/o%d", rng.Intn(50))
					uid, ok := live[key]
					switch {
					case !ok:
						uid = fmt.Sprintf("u%d-%d", rv, round)
						live[key] = uid
						o := testObject(t, key, uid, fmt.Sprint(rv))
						both(func(f *cache.RealFIFO) error { return f.Add(o) })
					case rng.Intn(4) == 0:
						delete(live, key)
						o := testObject(t, key, uid, fmt.Sprint(rv))
						both(func(f *cache.RealFIFO) error { return f.Delete(o) })
					default:
						o := testObject(t, key, uid, fmt.Sprint(rv))
						both(func(f *cache.RealFIFO) error { return f.Update(o) })
					}
				}
				if round%7 == 3 { // a relist that misses some deletes and makes some names again
					var list []any
					for key, uid := range live {
						if rng.Intn(5) == 0 {
							delete(live, key)
							continue
						}
						if rng.Intn(5) == 0 {
							uid = uid + "again"
							live[key] = uid
						}
						rv++
						list = append(list, testObject(t, key, uid, fmt.Sprint(rv)))
					}
					slices.SortFunc(list, func(a, b any) int { return compareKeys(a, b) })
					both(func(f *cache.RealFIFO) error { return f.Replace(list, fmt.Sprint(rv)) })
				}
				if round%11 == 5 {
					both(func(f *cache.RealFIFO) error { return f.Resync() })
				}
				// Drain both: the batched one through PopBatch, the other through Pop.
				drainFIFO(t, batched.f, func() error {
					pp, err := popOnce(t, batched.f, batched.p, func(bool) {})
					if pp.batch {
						batches++
					}
					seen := map[string]bool{}
					for _, k := range pp.keys {
						if seen[k] {
							t.Fatalf("a batch holds two deltas of %s: %q", k, pp.keys)
						}
						seen[k] = true
					}
					return err
				})
				drainFIFO(t, single.f, func() error {
					_, err := single.f.Pop(single.p.apply)
					return err
				})
			}
			if batches == 0 {
				t.Fatal("nothing was popped as a batch")
			}
			got, want := sortResyncs(batched.told.got()), sortResyncs(single.told.got())
			if !slices.Equal(got, want) {
				for i := range min(len(got), len(want)) {
					if got[i] != want[i] {
						t.Fatalf("call %d: batched %q, popped %q", i, got[i], want[i])
					}
				}
				t.Fatalf("batched %d calls, popped %d", len(got), len(want))
			}
		})
	}
}

func compareKeys(a, b any) int {
	ka, _ := cache.MetaNamespaceKeyFunc(a)
	kb, _ := cache.MetaNamespaceKeyFunc(b)
	switch {
	case ka < kb:
		return -1
	case ka > kb:
		return 1
	}
	return 0
}

// drainFIFO pops until the (closed) FIFO is empty.
func drainFIFO(t *testing.T, f *cache.RealFIFO, pop func() error) {
	t.Helper()
	for {
		err := pop()
		if errors.Is(err, cache.ErrFIFOClosed) {
			return
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}

// failingStore fails to add the object named bad.
type failingStore struct {
	cache.Store
	bad string
}

func (s failingStore) Add(obj any) error {
	if o, ok := obj.(*Object); ok && o.namespace+"/"+o.name == s.bad {
		return errors.New("test store: the store refuses " + s.bad)
	}
	return s.Store.Add(obj)
}

// TestAFailedDeltaIsDroppedNotRequeued: when applyBatch fails on one
// delta of a batch, the RealFIFO has already taken the whole batch off its
// queue and processLoop drops the error: the other deltas are applied and told
// once, the failed one is neither told nor handed over again, and nothing of
// the batch comes back. The shared informer's processDeltasInBatch did the
// same (a TransactionError: the callbacks of the successful ones run, the
// error is dropped) (a regression test: it holds).
func TestAFailedDeltaIsDroppedNotRequeued(t *testing.T) {
	t.Parallel()
	for _, atomicFIFO := range []bool{true, false} {
		t.Run(fmt.Sprintf("AtomicFIFO=%v", atomicFIFO), func(t *testing.T) {
			var told calls
			inner := cache.NewStore(cache.DeletionHandlingMetaNamespaceKeyFunc)
			store := failingStore{Store: inner, bad: "ns/bad"}
			p := &applier{store: store, h: told.handler()}
			f := controllerFIFO(atomicFIFO, store)
			f.Close()
			if err := f.Replace(nil, "1"); err != nil {
				t.Fatal(err)
			}
			for _, key := range []string{"ns/a", "ns/bad", "ns/c"} {
				if err := f.Add(testObject(t, key, "u", "2")); err != nil {
					t.Fatal(err)
				}
			}
			var errs []error
			var pops []pop
			drainFIFO(t, f, func() error {
				pp, err := popOnce(t, f, p, func(bool) {})
				if err != nil && !errors.Is(err, cache.ErrFIFOClosed) {
					errs, err = append(errs, err), nil
				}
				if !errors.Is(err, cache.ErrFIFOClosed) {
					pops = append(pops, pp)
				}
				return err
			})
			if len(errs) != 1 {
				t.Fatalf("errors %v, want the one refusal", errs)
			}
			if !slices.ContainsFunc(pops, func(pp pop) bool { return pp.batch && pp.n == 3 }) {
				t.Fatalf("a, bad and c were not popped as one batch: %+v", pops)
			}
			if err := f.Add(testObject(t, "ns/d", "u", "3")); err != nil {
				t.Fatal(err)
			}
			drainFIFO(t, f, func() error { _, err := popOnce(t, f, p, func(bool) {}); return err })
			want := []string{"add ns/a@2#u initial=false", "add ns/c@2#u initial=false", "add ns/d@3#u initial=false"}
			if got := told.got(); !slices.Equal(got, want) {
				t.Fatalf("calls:\n got %q\nwant %q (pops %+v)", got, want, pops)
			}
			if keys := inner.ListKeys(); len(keys) != 3 {
				t.Fatalf("store %q", keys)
			}
		})
	}
}

// sortResyncs sorts each run of resync calls (an update from an object to
// itself): a resync goes through the store in a map's order.
func sortResyncs(lines []string) []string {
	isResync := func(l string) bool {
		w := splitWords(l)
		return len(w) == 4 && w[0] == "update" && w[1] == w[3]
	}
	for i := 0; i < len(lines); {
		j := i
		for j < len(lines) && isResync(lines[j]) {
			j++
		}
		slices.Sort(lines[i:j])
		i = max(j, i+1)
	}
	return lines
}
