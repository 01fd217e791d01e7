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
				u := &unstructured.Unstructured{Object: testenv.ConfigMap(ns, fmt.Sprintf("%s-%d", prefix, i), map[string]any{"v": "0"})}
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
// reshard to three with state: objects that moved replay nothing (no delete
// from the old shard, no add from the new), what changed while stopped in an
// object that stayed with its shard replays once, and nothing is delivered
// twice.
func TestShardsEachEventOnceAndReshard(t *testing.T) {
	d := dynamic.NewForConfigOrDie(cp.Config)
	ns := testenv.Namespace(t, d)
	dir := t.TempDir()
	two, uids := twoShardsOnce(t, cp, d, dir, ns)
	two.stop()
	reshardTo3(t, d, dir, ns, uids)
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
	two, _ := twoShardsOnce(t, gated, d, t.TempDir(), ns)
	two.stop()
	for i, p := range two.procs {
		if !strings.Contains(p.stderr.String(), "objects of other shards are dropped by the server") {
			t.Errorf("shard %d does not say the server filters:\n%s", i, p.stderr.String())
		}
	}
	evs, err := gated.AuditEvents()
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
	if lists < 2 || watches < 2 {
		t.Errorf("%d lists and %d watches of the shards in the audit log, want two of each at least", lists, watches)
	}
}

// twoShardsOnce runs two shards on 1000 new objects: each event once between
// them, each its own objects', each caching its share. It returns the
// shards, running, and the objects' uids by name.
func twoShardsOnce(t *testing.T, env *testenv.Env, d dynamic.Interface, dir, ns string) (*shardSet, map[string]string) {
	t.Helper()
	two := startShards(t, env, dir, ns, 2)
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

// reshardTo3 changes objects while no shard runs, then starts three shards
// on the state the two left.
func reshardTo3(t *testing.T, d dynamic.Interface, dir, ns string, uids map[string]string) {
	t.Helper()
	// While stopped: 100 updated, 50 deleted, 20 created.
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
	for i := 900; i < 950; i++ {
		if err := ri.Delete(t.Context(), fmt.Sprintf("cm-%d", i), metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	createCMs(t, d, ns, "gap", 20)

	three := startShards(t, cp, dir, ns, 3)
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
	three.stop()
	checkReshard(t, three.payloads(), uids)
}

// checkReshard checks what three shards delivered after a reshard from two.
func checkReshard(t *testing.T, got map[int][]event.Payload, uids map[string]string) {
	t.Helper()
	owner := func(count int, uid string) int {
		for i := range count {
			if dyninformer.NewShard(count, i, false).Owns(uid, "") {
				return i
			}
		}
		return -1
	}
	seen := map[string]int{}
	for i, ps := range got {
		for _, p := range ps {
			seen[pkey(p)]++
			if owner(3, p.UID) != i {
				t.Errorf("shard %d delivered %s %s, another shard's", i, p.Type, p.Name)
			}
			var n int
			_, _ = fmt.Sscanf(p.Name, "cm-%d", &n)
			switch {
			case strings.HasPrefix(p.Name, "live-"), strings.HasPrefix(p.Name, "gap-"):
			case p.Type == event.Update && n < 100, p.Type == event.Delete && n >= 900 && n < 950:
				if owner(2, p.UID) != i || i == 2 {
					t.Errorf("shard %d replayed %s %s, which it did not have before", i, p.Type, p.Name)
				}
			default:
				t.Errorf("shard %d delivered %s %s (replay %v): nothing changed in it", i, p.Type, p.Name, p.Replay)
			}
		}
	}
	for k, n := range seen {
		if n != 1 {
			t.Errorf("%s delivered %d times", k, n)
		}
	}
	// What the contract keeps: every change of an object that kept its
	// shard (0 or 1, which have their state) replays.
	for name, uid := range uids {
		var n int
		_, _ = fmt.Sscanf(name, "cm-%d", &n)
		o := owner(3, uid)
		if o == 2 || owner(2, uid) != o {
			continue
		}
		switch {
		case n < 100 && seen[fmt.Sprintf("update %s true", uid)] != 1:
			t.Errorf("%s (shard %d) updated while stopped: no replayed update", name, o)
		case n >= 900 && n < 950 && seen[fmt.Sprintf("delete %s true", uid)] != 1:
			t.Errorf("%s (shard %d) deleted while stopped: no replayed delete", name, o)
		}
	}
}
