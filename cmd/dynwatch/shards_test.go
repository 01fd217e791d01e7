package main

import (
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	"github.com/dynwatch/dynwatch/dyninformer"
	"github.com/dynwatch/dynwatch/event"
	"github.com/dynwatch/dynwatch/internal/testenv"
)

var cmsGVR = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}

// shardSet runs count shard processes of one config (each its own POD_NAME
// and state file, as StatefulSet pods with their own volumes).
type shardSet struct {
	procs []*proc
	bases []string
}

func startShards(t *testing.T, env *testenv.Env, dir, ns string, count int) *shardSet {
	t.Helper()
	return startShardsWith(t, env, dir, ns, count, "")
}

// startShardsWith is startShards with extra top-level config lines.
func startShardsWith(t *testing.T, env *testenv.Env, dir, ns string, count int, extra string) *shardSet {
	t.Helper()
	s := &shardSet{}
	for i := range count {
		// The same config but for state.path: a pod's own volume.
		own := filepath.Join(dir, fmt.Sprintf("dynwatch-%d", i))
		if err := os.MkdirAll(own, 0o700); err != nil {
			t.Fatal(err)
		}
		cfg := writeConfig(t, own, fmt.Sprintf(`apiVersion: dynwatch/v1alpha1
server: {address: "127.0.0.1:0"}
state: {path: %s}
shards: {count: %d}
actions: [{name: out, log: {}}]
rules:
  - {name: cms, resources: [{group: "", resource: configmaps}], namespaces: [%s], on: [add, update, delete], actions: [out]}
%s`, filepath.Join(own, "state.db"), count, ns, extra))
		p := startProcWith(t, func(c *exec.Cmd) {
			c.Env = append(c.Environ(), fmt.Sprintf("POD_NAME=dynwatch-%d", i))
		}, "run", "--config", cfg, "--kubeconfig", env.Kubeconfig)
		s.procs = append(s.procs, p)
		s.bases = append(s.bases, "http://"+servedAddr(p))
	}
	for i, base := range s.bases {
		var last string
		ok := false
		for end := time.Now().Add(60 * time.Second); time.Now().Before(end) && !ok; time.Sleep(50 * time.Millisecond) {
			code, body := get(t, base+"/readyz")
			last = body
			ok = code == http.StatusOK && strings.Contains(body, fmt.Sprintf("shard: %d/%d by uid", i, count))
		}
		if !ok {
			t.Fatalf("shard %d not ready: %s\n%s", i, last, s.procs[i].stderr.String())
		}
	}
	return s
}

// payloads of every shard, each tagged with its shard.
func (s *shardSet) payloads() map[int][]event.Payload {
	out := map[int][]event.Payload{}
	for i, p := range s.procs {
		out[i] = p.payloads()
	}
	return out
}

func (s *shardSet) stop() {
	for _, p := range s.procs {
		p.stopOK(syscall.SIGTERM)
	}
}

func metricValue(t *testing.T, base, series string) int {
	t.Helper()
	_, body := get(t, base+"/metrics")
	m := regexp.MustCompile(regexp.QuoteMeta(series) + ` (\S+)`).FindStringSubmatch(body)
	if m == nil {
		t.Fatalf("no %s in /metrics", series)
	}
	v, _ := strconv.ParseFloat(m[1], 64)
	return int(v)
}

func createCMs(t *testing.T, d dynamic.Interface, ns, prefix string, n int) {
	t.Helper()
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			for i := w; i < n; i += 8 {
				u := &unstructured.Unstructured{Object: testenv.ConfigMap(ns, fmt.Sprintf("%s-%d", prefix, i), map[string]any{"v": "0", "w": "0"})}
				if _, err := d.Resource(cmsGVR).Namespace(ns).Create(t.Context(), u, metav1.CreateOptions{}); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
}

// key of a payload: its type, uid and whether it is replayed.
func pkey(p event.Payload) string { return fmt.Sprintf("%s %s %v", p.Type, p.UID, p.Replay) }

// Two shards on 1000 objects deliver each event exactly once between them,
// each only its own objects' and each caching only its share; then a
// reshard to three with state, without leaderElection: objects that moved
// replay nothing unless they changed (no delete from the old shard, no add
// from the new), what changed while stopped replays once, from the shard
// that owns it now (a delete from the shard that had it), and nothing is
// delivered twice. Shard 2, new to the set, has no file and no Lease to
// compare with: its objects' changes in the gap are the one loss left.
func TestShardsEachEventOnceAndReshard(t *testing.T) {
	d := dynamic.NewForConfigOrDie(cp.Config)
	ns := testenv.Namespace(t, d)
	dir := t.TempDir()
	two, uids := twoShardsOnce(t, cp, d, dir, ns, "")
	two.stop()
	reshardTo3(t, d, dir, ns, uids, "")
}

// The same 2 → 3 reshard with leaderElection: the shards' Leases say when
// each shard of the old spec stopped, so nothing is lost, the new shard 2's
// objects included, and nothing that did not change is delivered.
func TestShardsReshardWithLeasesLosesNothing(t *testing.T) {
	d := dynamic.NewForConfigOrDie(cp.Config)
	ns := testenv.Namespace(t, d)
	dir := t.TempDir()
	le := fmt.Sprintf("leaderElection: {namespace: %s, name: dw, leaseDuration: 4s, renewDeadline: 3s, retryPeriod: 500ms}\n", ns)
	two, uids := twoShardsOnce(t, cp, d, dir, ns, le)
	two.stop()
	reshardTo3(t, d, dir, ns, uids, le)
}

// With the API server filtering (ShardedListAndWatch), two shards deliver
// each event once, each receiving and caching only its share: every list and
// watch they make of the objects carries the shard's selector.
func TestShardsServerFilter(t *testing.T) {
	gated, err := testenv.Start(testenv.Options{FeatureGates: []string{"ShardedListAndWatch"}, AuditLog: true})
	if err != nil {
		t.Fatal(err)
	}
	defer gated.Stop()
	d := dynamic.NewForConfigOrDie(gated.Config)
	ns := testenv.Namespace(t, d)
	two, _ := twoShardsOnce(t, gated, d, t.TempDir(), ns, "")
	two.stop()
	for i, p := range two.procs {
		if !strings.Contains(p.stderr.String(), "objects of other shards are dropped by the server") {
			t.Errorf("shard %d does not say the server filters:\n%s", i, p.stderr.String())
		}
	}
	checkShardSelectors(t, gated, ns, 2)
}

// checkShardSelectors checks that env's audit log has lists and watches of
// the shards in ns, each with its shardSelector.
func checkShardSelectors(t *testing.T, env *testenv.Env, ns string, count int) {
	t.Helper()
	evs, err := env.AuditEvents()
	if err != nil {
		t.Fatal(err)
	}
	var lists, watches int
	for _, ev := range evs {
		if !strings.HasPrefix(ev.RequestURI, "/api/v1/namespaces/"+ns+"/configmaps?") || (ev.Verb != "list" && ev.Verb != "watch") || !strings.HasPrefix(ev.UserAgent, "dynwatch/") {
			continue
		}
		if ev.Verb == "list" {
			lists++
		} else {
			watches++
		}
		if !strings.Contains(ev.RequestURI, "shardSelector=shardRange") {
			t.Errorf("%s without its shardSelector: %s", ev.Verb, ev.RequestURI)
		}
	}
	if lists < count || watches < count {
		t.Errorf("%d lists and %d watches of the shards in the audit log, want %d of each at least", lists, watches, count)
	}
}

// twoShardsOnce runs two shards (extra: config lines) on 1000 new objects:
// each event once between them, each its own objects', each caching its
// share. It returns the shards, running, and the objects' uids by name.
func twoShardsOnce(t *testing.T, env *testenv.Env, d dynamic.Interface, dir, ns, extra string) (*shardSet, map[string]string) {
	t.Helper()
	two := startShardsWith(t, env, dir, ns, 2, extra)
	for i, base := range two.bases {
		if v := metricValue(t, base, fmt.Sprintf(`dynwatch_shard{count="2",index="%d"}`, i)); v != 1 {
			t.Errorf("shard %d: dynwatch_shard = %d", i, v)
		}
	}
	createCMs(t, d, ns, "cm", 1000)
	uids := map[string]string{} // name -> uid
	testenv.WaitFor(t, "1000 adds", 60*time.Second, func() bool {
		n := 0
		for _, ps := range two.payloads() {
			n += len(ps)
		}
		return n >= 1000
	})
	time.Sleep(time.Second) // a duplicate would come meanwhile
	seen := map[string]int{}
	for i, ps := range two.payloads() {
		shard := dyninformer.NewShard(2, i, false)
		for _, p := range ps {
			seen[pkey(p)]++
			uids[p.Name] = p.UID
			if !shard.Owns(p.UID, p.Namespace) {
				t.Errorf("shard %d delivered %s, another shard's", i, p.Name)
			}
		}
		cached := metricValue(t, two.bases[i], fmt.Sprintf(`dynwatch_informer_objects{namespace="%s",resource="configmaps"}`, ns))
		if cached != len(ps) || cached == 0 || cached == 1000 {
			t.Errorf("shard %d caches %d objects, delivered %d of 1000", i, cached, len(ps))
		}
	}
	for k, n := range seen {
		if n != 1 {
			t.Errorf("%s delivered %d times", k, n)
		}
	}
	if len(uids) != 1000 {
		t.Fatalf("%d objects delivered, want 1000", len(uids))
	}
	return two, uids
}

// reshardTo3 changes objects while no shard runs (100 updated, 50 deleted,
// 20 created), then starts three shards (extra: config lines) on the state
// the two left, and checks what they deliver (checkReshard).
func reshardTo3(t *testing.T, d dynamic.Interface, dir, ns string, uids map[string]string, extra string) {
	t.Helper()
	ri := d.Resource(cmsGVR).Namespace(ns)
	for i := range 100 {
		u, err := ri.Get(t.Context(), fmt.Sprintf("cm-%d", i), metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		_ = unstructured.SetNestedField(u.Object, "1", "data", "v")
		if _, err := ri.Update(t.Context(), u, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// A change that only removes a field (w is left, so its manager's
	// managedFields entry stays) moves no managedFields time: an object
	// that moved shards is told changed by its old shard's mark.
	for i := 100; i < 110; i++ {
		patch := []byte(`[{"op":"remove","path":"/data/v"}]`)
		if _, err := ri.Patch(t.Context(), fmt.Sprintf("cm-%d", i), types.JSONPatchType, patch, metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for i := 900; i < 950; i++ {
		if err := ri.Delete(t.Context(), fmt.Sprintf("cm-%d", i), metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	createCMs(t, d, ns, "gap", 20)
	l, err := ri.List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range l.Items {
		if strings.HasPrefix(o.GetName(), "gap-") {
			uids[o.GetName()] = string(o.GetUID())
		}
	}

	three := startShardsWith(t, cp, dir, ns, 3, extra)
	createCMs(t, d, ns, "live", 100)
	testenv.WaitFor(t, "100 live adds", 60*time.Second, func() bool {
		n := 0
		for _, ps := range three.payloads() {
			for _, p := range ps {
				if strings.HasPrefix(p.Name, "live-") {
					n++
				}
			}
		}
		return n >= 100
	})
	time.Sleep(time.Second) // a late replay or a duplicate would come meanwhile
	three.stop()
	checkReshard(t, three.payloads(), uids, extra != "")
}

// shardOf is the index of uid's shard of count.
func shardOf(count int, uid string) int {
	for i := range count {
		if dyninformer.NewShard(count, i, false).Owns(uid, "") {
			return i
		}
	}
	return -1
}

// reshardWant is what a 2 → 3 reshard delivers for the object name (uid),
// as "TYPE REPLAY" and the shard that delivers it ("" when nothing): the
// update of cm-0…109 and the add of gap-*, from its shard of three; the
// delete of cm-900…949, from its shard of two, which had it. exact: with
// leaderElection; without, shard 2 (new, no file) fires nothing of its own,
// and the update of cm-100…109 (a field removed) of an object that moved is
// not told (no old shard published a mark: "?", not checked).
func reshardWant(name, uid string, exact bool) (string, int) {
	var n int
	_, _ = fmt.Sscanf(name, "cm-%d", &n)
	want, from := "", shardOf(3, uid)
	switch {
	case strings.HasPrefix(name, "gap-"):
		want = "add true"
	case strings.HasPrefix(name, "cm-") && n < 100:
		want = "update true"
	case strings.HasPrefix(name, "cm-") && n < 110:
		want = "update true"
		if !exact && shardOf(2, uid) != shardOf(3, uid) {
			return "?", -1 // not known: it may count as changed for its times (none left)
		}
	case strings.HasPrefix(name, "cm-") && n >= 900 && n < 950:
		want, from = "delete true", shardOf(2, uid)
	}
	if !exact && from == 2 && want != "" {
		return "", -1
	}
	return want, from
}

// checkReshard checks what three shards delivered after a reshard from two
// (uids: every object before the live ones, by name): every change made
// while stopped once, from the shard reshardWant names, and nothing else
// but the live adds.
func checkReshard(t *testing.T, got map[int][]event.Payload, uids map[string]string, exact bool) {
	t.Helper()
	seen := map[string]int{}
	for i, ps := range got {
		for _, p := range ps {
			seen[p.Name+" "+pkey(p)]++
			if strings.HasPrefix(p.Name, "live-") {
				if p.Type != event.Add || p.Replay || shardOf(3, p.UID) != i {
					t.Errorf("shard %d delivered %s of %s (replay %v)", i, p.Type, p.Name, p.Replay)
				}
				continue
			}
			want, from := reshardWant(p.Name, p.UID, exact)
			if want == "?" {
				continue
			}
			if got := fmt.Sprintf("%s %v", p.Type, p.Replay); got != want || from != i {
				t.Errorf("shard %d delivered %s of %s (shard %d of 2, %d of 3), want %q from shard %d", i, got, p.Name, shardOf(2, p.UID), shardOf(3, p.UID), want, from)
			}
			// A moved-in update knows nothing of the old state; one of an
			// object that kept its shard has its recorded values.
			movedIn := shardOf(2, p.UID) != shardOf(3, p.UID)
			if p.Type == event.Update && movedIn != (string(p.OldObject) == "{}" && len(p.Changed) == 0) {
				t.Errorf("update of %s (moved %v): oldObject %s, changed %v", p.Name, movedIn, p.OldObject, p.Changed)
			}
		}
	}
	var lost, delivered, moved int
	for name, uid := range uids {
		want, _ := reshardWant(name, uid, exact)
		if want == "" || want == "?" {
			continue
		}
		typ, replay, _ := strings.Cut(want, " ")
		switch n := seen[fmt.Sprintf("%s %s %s %s", name, typ, uid, replay)]; {
		case n == 0:
			lost++
			t.Errorf("%s (shard %d of 2, %d of 3): its %s while stopped is lost", name, shardOf(2, uid), shardOf(3, uid), typ)
		case n > 1:
			t.Errorf("%s: its %s delivered %d times", name, typ, n)
		default:
			delivered++
			if shardOf(2, uid) != shardOf(3, uid) {
				moved++
			}
		}
	}
	t.Logf("%d changes made while stopped delivered (%d of objects that moved shards), %d lost", delivered, moved, lost)
}
