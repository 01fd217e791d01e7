package dyninformer

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"slices"
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

// faultyProxy stands between an informer and the real API server, as a
// gateway does. It ends every watch after a second (so that the informer
// comes back soon), refuses streaming watch-lists (so that the informer
// lists), and, once armed, answers the next watch with a 410 (so that the
// informer lists again) and the next list with a 200 that is no list.
type faultyProxy struct {
	ns    string // the namespace whose config maps are watched
	proxy *httputil.ReverseProxy

	mu          sync.Mutex
	expireWatch bool
	badList     bool
	served      []string // "list", "bad list", "watch" for ns's config maps, in order
}

func newFaultyProxy(t *testing.T, cfg *rest.Config, ns string) (*faultyProxy, *httptest.Server) {
	p := &faultyProxy{ns: ns, proxy: apiProxy(t, cfg)}
	srv := httptest.NewServer(p)
	t.Cleanup(srv.Close)
	return p, srv
}

func (p *faultyProxy) arm() {
	p.mu.Lock()
	p.expireWatch, p.badList = true, true
	p.mu.Unlock()
}

// log is what the proxy served for the config maps of ns, in order.
func (p *faultyProxy) log() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.served)
}

func (p *faultyProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/api/v1/namespaces/"+p.ns+"/configmaps" {
		p.proxy.ServeHTTP(w, r)
		return
	}
	q := r.URL.Query()
	p.mu.Lock()
	var act string
	switch watch := q.Get("watch") == "true"; {
	case q.Get("sendInitialEvents") == "true":
		act = "refused watch-list"
	case watch && p.expireWatch:
		p.expireWatch, act = false, "expired watch"
	case watch:
		act = "watch"
	case p.badList:
		p.badList, act = false, "bad list"
	default:
		act = "list"
	}
	p.served = append(p.served, act)
	p.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	switch act {
	case "refused watch-list":
		w.WriteHeader(http.StatusBadRequest)
		_, _ = io.WriteString(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"BadRequest","code":400,"message":"no watch-list here"}`)
	case "expired watch":
		w.WriteHeader(http.StatusGone)
		_, _ = io.WriteString(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"Expired","code":410,"message":"too old resource version"}`)
	case "bad list":
		_, _ = io.WriteString(w, `{"error":"upstream timeout"}`)
	case "watch":
		q.Set("timeoutSeconds", "1")
		r.URL.RawQuery = q.Encode()
		p.proxy.ServeHTTP(w, r)
	default:
		p.proxy.ServeHTTP(w, r)
	}
}

// TestRelistThroughAProxyThatAnswersNoList: a relist whose list comes back as
// a 200 that is no list ({"error":"upstream timeout"}) fails and is tried
// again; it is not a list of nothing, which would fire a delete for every
// object in the cache.
func TestRelistThroughAProxyThatAnswersNoList(t *testing.T) {
	d := dynamic.NewForConfigOrDie(cluster(t))
	ns := testenv.Namespace(t, d)
	for _, n := range []string{"a", "b", "c"} {
		if _, err := d.Resource(cmGVR).Namespace(ns).Create(t.Context(), labelledConfigMap(ns, n, "1"), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	proxy, srv := newFaultyProxy(t, restConfig, ns)
	client, err := NewClient(&rest.Config{Host: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	col := &collector{}
	logs := &testenv.Buffer{}
	m := NewManager(client, col.handle, Options{Logger: slog.New(slog.NewTextHandler(logs, nil))})
	m.Set([]Watch{{Resource: event.Resource{Version: "v1", Resource: "configmaps", Kind: "ConfigMap", Namespaced: true}, Namespace: ns}}, ListsKnown)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx) }()
	defer func() { cancel(); <-done }()
	col.waitFor(t, 3)

	proxy.arm()
	// The relist: the watch that follows a list after the bad one is the
	// informer watching again with what it listed.
	testenv.WaitFor(t, "a watch after the bad list", 30*time.Second, func() bool {
		served := proxy.log()
		i := slices.Index(served, "bad list")
		return i >= 0 && slices.Contains(served[i+1:], "watch")
	})
	// Handler calls come in order: once z's add is handled, whatever the
	// relist fired has been handled too.
	if _, err := d.Resource(cmGVR).Namespace(ns).Create(t.Context(), labelledConfigMap(ns, "z", "1"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	testenv.WaitFor(t, "the add of z", 20*time.Second, func() bool {
		return slices.ContainsFunc(col.events(), func(ev *event.Event) bool { return ev.Name == "z" })
	})
	for _, ev := range col.events() {
		if ev.Type != event.Add {
			t.Errorf("%s of %s after a relist of a body that is no list", ev.Type, ev.Name)
		}
	}
	served := proxy.log()
	t.Logf("served: %v", served)
	i := slices.Index(served, "bad list")
	if !slices.Contains(served[i+1:], "list") {
		t.Errorf("no list after the bad one; served: %v", served)
	}
	if !strings.Contains(logs.String(), "not a list") {
		t.Errorf("the bad list is not reported:\n%s", logs)
	}
}
