package dyninformer

import (
	"fmt"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/dynwatch/dynwatch/internal/testenv"
)

// shardObjects makes n ConfigMaps in a new namespace and returns it with
// their uids.
func shardObjects(t *testing.T, cfg *rest.Config, n int) (string, []string) {
	t.Helper()
	d := dynamic.NewForConfigOrDie(cfg)
	ns := testenv.Namespace(t, d)
	uids := make([]string, n)
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := w; i < n; i += 4 {
				u, err := d.Resource(cmGVR).Namespace(ns).Create(t.Context(), labelledConfigMap(ns, fmt.Sprintf("cm-%d", i), "v"), metav1.CreateOptions{})
				if err != nil {
					t.Error(err)
					return
				}
				uids[i] = string(u.GetUID())
			}
		})
	}
	wg.Wait()
	return ns, uids
}

// A shard's list, watch-list (sendInitialEvents, with its bookmark) and plain
// watch from a resourceVersion return only its objects: filtered by the server
// where it serves sharded list and watch (each request carries the
// shardSelector, as the audit log shows), by the client elsewhere.
func TestShardListAndWatch(t *testing.T) {
	gated, err := testenv.Start(testenv.Options{FeatureGates: []string{"ShardedListAndWatch"}, AuditLog: true})
	if err != nil {
		t.Fatal(err)
	}
	defer gated.Stop()
	for _, tc := range []struct {
		name    string
		cfg     *rest.Config
		filters bool
	}{
		{"server filters", gated.Config, true},
		{"client filters", cluster(t), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ns, uids := shardObjects(t, tc.cfg, 40)
			base, err := NewClient(tc.cfg)
			if err != nil {
				t.Fatal(err)
			}
			shard := NewShard(2, 1, false)
			c := base.WithShard(shard, nil)
			want := map[string]bool{}
			for _, uid := range uids {
				if shard.Owns(uid, ns) {
					want[uid] = true
				}
			}
			l, err := c.List(t.Context(), cmGVR, ns, metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			checkOwn(t, "list", anys(l.Items), want, true)
			if got := c.ServerFilters()["v1"]; got != tc.filters {
				t.Errorf("server filters = %v, want %v", got, tc.filters)
			}
			yes := true
			w, err := c.Watch(t.Context(), cmGVR, ns, metav1.ListOptions{SendInitialEvents: &yes, ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan, AllowWatchBookmarks: true})
			if err != nil {
				t.Fatal(err)
			}
			checkOwn(t, "watch-list", watchUntilBookmark(t, w), want, true)
			w, err = c.Watch(t.Context(), cmGVR, ns, metav1.ListOptions{ResourceVersion: "1"})
			if err != nil {
				t.Fatal(err)
			}
			checkOwn(t, "watch from resourceVersion 1", watchFor(w, 3*time.Second), want, false)
			if tc.filters {
				checkAudit(t, gated, ns)
			}
		})
	}
}

func checkOwn(t *testing.T, what string, items []any, want map[string]bool, all bool) {
	t.Helper()
	got := map[string]bool{}
	for _, it := range items {
		o := it.(*Object)
		if !want[o.uid] {
			t.Errorf("%s: %s is another shard's", what, o.name)
		}
		got[o.uid] = true
	}
	if all && len(got) != len(want) {
		t.Errorf("%s: %d objects, want the shard's %d", what, len(got), len(want))
	}
	if len(got) == 0 {
		t.Errorf("%s: no objects", what)
	}
}

func watchUntilBookmark(t *testing.T, w watch.Interface) []any {
	defer w.Stop()
	var out []any
	timeout := time.After(20 * time.Second)
	for {
		select {
		case ev := <-w.ResultChan():
			if ev.Type == watch.Bookmark {
				return out
			}
			out = append(out, ev.Object)
		case <-timeout:
			t.Fatal("no bookmark ended the initial events")
		}
	}
}

func watchFor(w watch.Interface, d time.Duration) []any {
	defer w.Stop()
	var out []any
	timeout := time.After(d)
	for {
		select {
		case ev := <-w.ResultChan():
			if ev.Type == watch.Added || ev.Type == watch.Modified {
				out = append(out, ev.Object)
			}
		case <-timeout:
			return out
		}
	}
}

// checkAudit: every list and watch of ns's ConfigMaps carried the shard's
// selector, in the 16-digit form; the three kinds were all made.
func checkAudit(t *testing.T, env *testenv.Env, ns string) {
	t.Helper()
	var evs []testenv.AuditEvent
	testenv.WaitFor(t, "the audit log to hold the watches", 10*time.Second, func() bool {
		evs, _ = env.AuditEvents()
		n := 0
		for _, ev := range evs {
			if ev.Verb == "watch" && strings.Contains(ev.RequestURI, "/namespaces/"+ns+"/configmaps") {
				n++
			}
		}
		return n >= 2
	})
	kinds := map[string]int{}
	for _, ev := range evs {
		u, err := url.Parse(ev.RequestURI)
		if err != nil || u.Path != "/api/v1/namespaces/"+ns+"/configmaps" || (ev.Verb != "list" && ev.Verb != "watch") {
			continue
		}
		q := u.Query()
		if sel := q.Get("shardSelector"); sel != "shardRange(object.metadata.uid, '0x8000000000000000', '0x10000000000000000')" {
			t.Errorf("%s %s: shardSelector %q", ev.Verb, ev.RequestURI, sel)
		}
		switch {
		case ev.Verb == "list":
			kinds["list"]++
		case q.Get("sendInitialEvents") == "true":
			kinds["watch-list"]++
		default:
			kinds["watch"]++
		}
	}
	for _, k := range []string{"list", "watch-list", "watch"} {
		if kinds[k] == 0 {
			t.Errorf("no %s in the audit log: %v", k, kinds)
		}
	}
}

func anys[T any](xs []T) []any {
	out := make([]any, len(xs))
	for i, x := range xs {
		out[i] = x
	}
	return out
}
