package dyninformer

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"slices"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/dynwatch/dynwatch/event"
	"github.com/dynwatch/dynwatch/internal/testenv"
)

// expiringPagesProxy stands between an informer and the real API server.
// It refuses watch-lists (so that the informer lists in pages), makes the
// informer's first list one object a page, and answers the first continued
// page with a 410 Expired (an expired continue token, as an API server
// answers one older than its compaction), after deleting victim: client-go's
// pager then lists in full, afresh, at a later resourceVersion.
type expiringPagesProxy struct {
	ns, victim string
	del        func() error
	proxy      *httputil.ReverseProxy

	mu      sync.Mutex
	expired bool
	served  []string
}

func (p *expiringPagesProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/api/v1/namespaces/"+p.ns+"/configmaps" {
		p.proxy.ServeHTTP(w, r)
		return
	}
	q := r.URL.Query()
	p.mu.Lock()
	var act string
	switch {
	case q.Get("sendInitialEvents") == "true":
		act = "refused watch-list"
	case q.Get("watch") == "true":
		act = "watch"
	case q.Get("continue") != "" && !p.expired:
		p.expired, act = true, "expired continue"
	case q.Get("continue") != "":
		act = "page"
	case !slices.Contains(p.served, "first page"):
		act = "first page"
	default:
		act = "list"
	}
	p.served = append(p.served, act)
	p.mu.Unlock()
	switch act {
	case "refused watch-list":
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		_, _ = io.WriteString(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"BadRequest","code":400,"message":"no watch-list here"}`)
	case "expired continue":
		if err := p.del(); err != nil {
			panic(err)
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusGone)
		_, _ = io.WriteString(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"Expired","code":410,"message":"The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter."}`)
	case "first page":
		q.Set("limit", "1")
		r.URL.RawQuery = q.Encode()
		p.proxy.ServeHTTP(w, r)
	default:
		p.proxy.ServeHTTP(w, r)
	}
}

func (p *expiringPagesProxy) log() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.served)
}

// TestListedIsTheListTheInformerHeldNotAnAbandonedFirstPage: Status.Listed
// (the resourceVersion a reshard's old shard lists the moved objects at, as
// "what the new owner's list held") must be the snapshot of the list the
// informer's cache was filled from. When the first page of a paged list
// succeeds but a later page fails (here: an expired continue token, after
// which client-go's pager lists in full afresh), noteListed has already
// kept the abandoned first page's resourceVersion: an object deleted
// between that page and the list the informer really took is at Listed but
// was never in the cache — its new owner never delivers its delete, and the
// old shard, finding it at Listed, drops its record: the delete is lost.
func TestListedIsTheListTheInformerHeldNotAnAbandonedFirstPage(t *testing.T) {
	cfg := cluster(t)
	d := dynamic.NewForConfigOrDie(cfg)
	ns := testenv.Namespace(t, d)
	for _, n := range []string{"a", "b", "c"} {
		if _, err := d.Resource(cmGVR).Namespace(ns).Create(t.Context(), labelledConfigMap(ns, n, "1"), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	p := &expiringPagesProxy{ns: ns, victim: "b",
		del: func() error {
			return d.Resource(cmGVR).Namespace(ns).Delete(context.Background(), "b", metav1.DeleteOptions{})
		},
		proxy: apiProxy(t, cfg),
	}
	srv := httptest.NewServer(p)
	t.Cleanup(srv.Close)
	col := &collector{}
	m := runManager(t, &rest.Config{Host: srv.URL}, cmWatch(ns), col.handle)
	testenv.WaitFor(t, "the informer synced", 30*time.Second, func() bool {
		st := m.Statuses()
		return len(st) == 1 && st[0].Synced && st[0].Listed != ""
	})
	t.Logf("served: %v", p.log())
	if !slices.Contains(p.log(), "expired continue") {
		t.Fatalf("the informer's list was not paged through the proxy: %v", p.log())
	}
	listedHeld(t, d, ns, m, col)
}

// listedHeld fails unless a list at the one watch's Listed holds exactly the
// objects its informer's list handed over.
func listedHeld(t *testing.T, d dynamic.Interface, ns string, m *Manager, col *collector) {
	t.Helper()
	held := initialNames(col)
	slices.Sort(held)
	listed := m.Statuses()[0].Listed
	l, err := d.Resource(cmGVR).Namespace(ns).List(t.Context(), metav1.ListOptions{ResourceVersion: listed, ResourceVersionMatch: metav1.ResourceVersionMatchExact})
	if err != nil {
		t.Fatal(err)
	}
	var atListed []string
	for _, o := range l.Items {
		atListed = append(atListed, o.GetName())
	}
	slices.Sort(atListed)
	t.Logf("informer handed over %v; a list at Listed=%s holds %v", held, listed, atListed)
	if !slices.Equal(held, atListed) {
		t.Errorf("Listed=%s is not the list the informer held: a list at it holds %v, the informer's list held %v", listed, atListed, held)
	}
}

// onePerPageProxy stands between an informer and the real API server: it
// refuses watch-lists, makes every list page one object, and calls between
// once the first page was served, before the second.
type onePerPageProxy struct {
	ns      string
	between func() error
	proxy   *httputil.ReverseProxy

	mu    sync.Mutex
	pages int
}

func (p *onePerPageProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	if r.URL.Path != "/api/v1/namespaces/"+p.ns+"/configmaps" || (q.Get("watch") == "true" && q.Get("sendInitialEvents") != "true") {
		p.proxy.ServeHTTP(w, r)
		return
	}
	if q.Get("sendInitialEvents") == "true" {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		_, _ = io.WriteString(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"BadRequest","code":400,"message":"no watch-list here"}`)
		return
	}
	p.mu.Lock()
	p.pages++
	if p.pages == 2 {
		if err := p.between(); err != nil {
			panic(err)
		}
	}
	p.mu.Unlock()
	q.Set("limit", "1")
	r.URL.RawQuery = q.Encode()
	p.proxy.ServeHTTP(w, r)
}

// TestListedIsTheFirstPagesOfAPagedList: a list in several pages is one
// snapshot, at its first page's resourceVersion, which is Listed; an object
// made while the pages come is in neither the informer's list nor a list at
// Listed. (Listed is noted when the reflector hands the list to its FIFO.)
func TestListedIsTheFirstPagesOfAPagedList(t *testing.T) {
	cfg := cluster(t)
	d := dynamic.NewForConfigOrDie(cfg)
	ns := testenv.Namespace(t, d)
	for _, n := range []string{"a", "b", "c", "d"} {
		if _, err := d.Resource(cmGVR).Namespace(ns).Create(t.Context(), labelledConfigMap(ns, n, "1"), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	p := &onePerPageProxy{ns: ns,
		between: func() error {
			_, err := d.Resource(cmGVR).Namespace(ns).Create(context.Background(), labelledConfigMap(ns, "late", "1"), metav1.CreateOptions{})
			return err
		},
		proxy: apiProxy(t, cfg),
	}
	srv := httptest.NewServer(p)
	t.Cleanup(srv.Close)
	col := &collector{}
	m := runManager(t, &rest.Config{Host: srv.URL}, cmWatch(ns), col.handle)
	testenv.WaitFor(t, "the informer synced", 30*time.Second, func() bool {
		st := m.Statuses()
		return len(st) == 1 && st[0].Synced && st[0].Listed != ""
	})
	p.mu.Lock()
	pages := p.pages
	p.mu.Unlock()
	if pages < 4 {
		t.Fatalf("the informer's list came in %d pages, want 4 or more", pages)
	}
	if held := initialNames(col); len(held) != 4 {
		t.Fatalf("the informer's list handed over %v, want the 4 made before it", held)
	}
	listedHeld(t, d, ns, m, col)
}

// initialNames are the names of the objects the informer's list handed over
// (not the watch's after it), sorted.
func initialNames(col *collector) []string {
	var held []string
	for _, ev := range col.events() {
		if ev.Origin == event.InitialList {
			held = append(held, ev.Name)
		}
	}
	slices.Sort(held)
	return held
}
