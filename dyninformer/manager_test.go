package dyninformer

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/dynwatch/dynwatch/event"
	"github.com/dynwatch/dynwatch/internal/testenv"
)

// TestWatchListOnAndOff runs TestInformerLifecycle in a child process with
// client-go's streaming watch-list on and with it off, as users switch it:
// KUBE_FEATURE_WatchListClient. client-go reads its feature gates once per
// process, so each setting needs a process of its own.
func TestWatchListOnAndOff(t *testing.T) {
	if os.Getenv(kubeconfigEnv) != "" {
		t.Skip("in a child")
	}
	cluster(t)
	kubeconfig := env.Kubeconfig
	for _, on := range []string{"true", "false"} {
		t.Run("WatchListClient="+on, func(t *testing.T) {
			cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run", "^TestInformerLifecycle$", "-test.v", "-test.count=1")
			cmd.Env = append(os.Environ(), kubeconfigEnv+"="+kubeconfig, "KUBE_FEATURE_WatchListClient="+on, "DYNWATCH_WANT_WATCHLIST="+on)
			out, err := cmd.CombinedOutput()
			if err != nil || !bytes.Contains(out, []byte("--- PASS: TestInformerLifecycle")) {
				t.Fatalf("child: %v\n%s", err, out)
			}
		})
	}
}

// requests records the list and watch requests an informer makes.
type requests struct {
	mu   sync.Mutex
	urls []string
}

func (r *requests) wrap(rt http.RoundTripper) http.RoundTripper {
	return testenv.RoundTripFunc(func(req *http.Request) (*http.Response, error) {
		r.mu.Lock()
		r.urls = append(r.urls, req.URL.RequestURI())
		r.mu.Unlock()
		return rt.RoundTrip(req)
	})
}

func (r *requests) list() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.urls)
}

// TestInformerLifecycle follows config maps through an initial list, an
// update, a delete, a resync and a replay, and checks that the objects are
// the server's JSON without managedFields, with their kind, and that the list
// came the way client-go's feature gate says.
func TestInformerLifecycle(t *testing.T) {
	d := dynamic.NewForConfigOrDie(cluster(t))
	ns := testenv.Namespace(t, d)
	for _, n := range []string{"a", "b", "c"} {
		if _, err := d.Resource(cmGVR).Namespace(ns).Create(t.Context(), labelledConfigMap(ns, n, "1"), metav1.CreateOptions{FieldManager: "test"}); err != nil {
			t.Fatal(err)
		}
	}
	reqs := &requests{}
	cfg := rest.CopyConfig(restConfig)
	cfg.Wrap(reqs.wrap)
	client, err := NewClient(cfg)
	if err != nil {
		t.Fatal(err)
	}
	col := &collector{}
	m := NewManager(client, col.handle, Options{Resync: 200 * time.Millisecond, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	key := Watch{Resource: event.Resource{Version: "v1", Resource: "configmaps", Kind: "ConfigMap", Namespaced: true}, Namespace: ns}
	m.Set([]Watch{key}, ListsKnown)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx) }()
	defer func() { cancel(); <-done }()
	if !m.WaitForSync(t.Context()) {
		t.Fatal("no sync")
	}
	evs := col.waitFor(t, 3)
	for _, ev := range evs {
		if ev.Type != event.Add || ev.Origin != event.InitialList || ev.Namespace != ns || ev.UID == "" || ev.ResourceVersion == "" {
			t.Errorf("initial event %+v", ev)
		}
		checkObject(t, ev.Object)
	}
	checkListMode(t, reqs.list(), ns)
	// Its first list's resourceVersion (the snapshot a watch-list streamed,
	// or a paged list's) is at or above every object listed.
	listed := listedOf(t, m)
	// A watch-list's stream tells that the watch is alive (a paged list does
	// not: it is no watch), and so does every event after it.
	seen := m.Statuses()[0].LastEvent
	if seen.IsZero() && os.Getenv("DYNWATCH_WANT_WATCHLIST") == "true" {
		t.Error("a watch-list streamed the objects, and no LastEvent")
	}
	for _, ev := range evs {
		if rvNum(t, ev.ResourceVersion) > listed {
			t.Errorf("%s listed at %d, above the list's %d", ev.Name, rvNum(t, ev.ResourceVersion), listed)
		}
	}

	b, err := d.Resource(cmGVR).Namespace(ns).Get(t.Context(), "b", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	b.Object["data"] = map[string]any{"v": "2"}
	if _, err := d.Resource(cmGVR).Namespace(ns).Update(t.Context(), b, metav1.UpdateOptions{FieldManager: "test"}); err != nil {
		t.Fatal(err)
	}
	if err := d.Resource(cmGVR).Namespace(ns).Delete(t.Context(), "c", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	evs = col.waitFor(t, 5)
	if now := m.Statuses()[0].LastEvent; !now.After(seen) {
		t.Errorf("LastEvent %s after an update and a delete, was %s", now.Format(time.StampMicro), seen.Format(time.StampMicro))
	}
	upd, del := evs[3], evs[4]
	if upd.Type != event.Update || upd.Name != "b" || !bytes.Contains(upd.Object, []byte(`"v":"2"`)) || !bytes.Contains(upd.OldObject, []byte(`"v":"1"`)) {
		t.Errorf("update: %s %s\nobject %s\nold %s", upd.Type, upd.Name, upd.Object, upd.OldObject)
	}
	if del.Type != event.Delete || del.Name != "c" {
		t.Errorf("delete: %s %s", del.Type, del.Name)
	}
	checkObject(t, upd.Object)
	checkObject(t, upd.OldObject)
	if now := listedOf(t, m); now != listed || rvNum(t, upd.ResourceVersion) <= listed {
		t.Errorf("after an update at %s the first list's resourceVersion is %d (was %d)", upd.ResourceVersion, now, listed)
	}

	// Resyncs (every 200ms here) hand the cache over again: no events. Wait
	// until both objects left have been handed over again twice since.
	resynced := m.Resyncs()
	testenv.WaitFor(t, "two resyncs of the cache", 10*time.Second, func() bool { return m.Resyncs() >= resynced+4 })
	if n := len(col.events()); n != 5 {
		t.Errorf("%d events after resyncs, want still 5", n)
	}
	// The cache holds the objects as they are now; each decodes on request.
	var cached []string
	for _, o := range m.Objects(key.Key()) {
		u, err := o.Unstructured()
		if err != nil {
			t.Fatal(err)
		}
		cached = append(cached, u.GetName()+"="+u.Object["data"].(map[string]any)["v"].(string))
		if u.GetManagedFields() != nil {
			t.Errorf("%s: managedFields in the cache", u.GetName())
		}
	}
	slices.Sort(cached)
	if !slices.Equal(cached, []string{"a=1", "b=2"}) {
		t.Errorf("cache holds %v, want a=1 b=2", cached)
	}
	// Replay hands over the cache as it is now: a and b.
	if !m.Replay(key.Key(), 9) {
		t.Fatal("Replay: not synced")
	}
	evs = col.waitFor(t, 7)
	var names []string
	for _, ev := range evs[5:] {
		names = append(names, ev.Name)
		if ev.Origin != event.InitialList || ev.Epoch != 9 {
			t.Errorf("replayed %s: origin %v epoch %d", ev.Name, ev.Origin, ev.Epoch)
		}
	}
	slices.Sort(names)
	if !slices.Equal(names, []string{"a", "b"}) {
		t.Errorf("replayed %v, want a and b", names)
	}
	// Events carry the cached bytes themselves: nothing is encoded per event.
	cachedBytes := map[string][]byte{}
	for _, o := range m.Objects(key.Key()) {
		cachedBytes[o.GetName()] = o.JSON()
	}
	for _, ev := range evs[5:] {
		if c := cachedBytes[ev.Name]; len(c) == 0 || &c[0] != &ev.Object[0] {
			t.Errorf("the event of %s carries a copy of the cached object, not the object", ev.Name)
		}
	}
}

// checkObject: the bytes are an object with kind and apiVersion, labels and
// data, and no managedFields, though the server keeps them.
func checkObject(t *testing.T, b []byte) {
	t.Helper()
	m := decodeMap(t, b)
	md, _ := m["metadata"].(map[string]any)
	if m["kind"] != "ConfigMap" || m["apiVersion"] != "v1" || md["name"] == nil || md["labels"] == nil || m["data"] == nil {
		t.Errorf("object %s", b)
	}
	if _, ok := md["managedFields"]; ok {
		t.Errorf("managedFields kept: %s", b)
	}
}

// checkListMode: with watch-list the initial list is a watch that sends the
// existing objects first; without it, a LIST.
func checkListMode(t *testing.T, urls []string, ns string) {
	t.Helper()
	var lists, watchLists int
	for _, u := range urls {
		if !strings.Contains(u, "/namespaces/"+ns+"/configmaps") {
			continue
		}
		switch {
		case strings.Contains(u, "sendInitialEvents=true"):
			watchLists++
		case !strings.Contains(u, "watch=true"):
			lists++
		}
	}
	want := os.Getenv("DYNWATCH_WANT_WATCHLIST")
	t.Logf("KUBE_FEATURE_WatchListClient=%q: %d lists, %d watch-lists", os.Getenv("KUBE_FEATURE_WatchListClient"), lists, watchLists)
	switch want {
	case "true":
		if watchLists != 1 || lists != 0 {
			t.Errorf("want one watch-list and no LIST; requests:\n%s", strings.Join(urls, "\n"))
		}
	case "false":
		if watchLists != 0 || lists == 0 {
			t.Errorf("want a LIST and no watch-list; requests:\n%s", strings.Join(urls, "\n"))
		}
		// In pages: a consistent list with the reflector's limit, never the
		// whole cache at resourceVersion 0 in one response.
		for _, u := range urls {
			if strings.Contains(u, "/namespaces/"+ns+"/configmaps") && !strings.Contains(u, "watch=true") &&
				(strings.Contains(u, "resourceVersion=0") || !strings.Contains(u, "limit=")) {
				t.Errorf("a list not in pages: %s", u)
			}
		}
	}
}

// listedOf is the one watch's Status.Listed, as a number.
func listedOf(t *testing.T, m *Manager) uint64 {
	t.Helper()
	st := m.Statuses()
	if len(st) != 1 {
		t.Fatalf("%d watches", len(st))
	}
	return rvNum(t, st[0].Listed)
}

func rvNum(t *testing.T, rv string) uint64 {
	t.Helper()
	n, err := strconv.ParseUint(rv, 10, 64)
	if err != nil {
		t.Fatalf("resourceVersion %q: %v", rv, err)
	}
	return n
}
