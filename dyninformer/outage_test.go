package dyninformer

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/dynwatch/dynwatch/event"
	"github.com/dynwatch/dynwatch/internal/testenv"
)

// watchCutter ends the watch streams open through it at will, as a restarted
// API server or a load balancer does, and counts the watches that were
// accepted.
type watchCutter struct {
	mu       sync.Mutex
	open     []*cutBody
	accepted int
}

func (c *watchCutter) wrap(rt http.RoundTripper) http.RoundTripper {
	return testenv.RoundTripFunc(func(req *http.Request) (*http.Response, error) {
		resp, err := rt.RoundTrip(req)
		if err != nil || req.URL.Query().Get("watch") != "true" || resp.StatusCode != http.StatusOK {
			return resp, err
		}
		b := &cutBody{ReadCloser: resp.Body}
		resp.Body = b
		c.mu.Lock()
		c.open = append(c.open, b)
		c.accepted++
		c.mu.Unlock()
		return resp, nil
	})
}

// cut ends every watch stream open now.
func (c *watchCutter) cut() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, b := range c.open {
		b.cut.Store(true)
		_ = b.ReadCloser.Close()
	}
	c.open = nil
}

func (c *watchCutter) acceptedWatches() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.accepted
}

// cutBody is a watch stream that ends (io.EOF) once cut.
type cutBody struct {
	io.ReadCloser
	cut atomic.Bool
}

func (b *cutBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if b.cut.Load() {
		return 0, io.EOF
	}
	return n, err
}

// TestEveryOutageIsReported: a watch whose RBAC is revoked, restored and
// revoked again says so at WARN both times, not only the first: the watch
// that the API server accepts in between ends the first outage.
func TestEveryOutageIsReported(t *testing.T) {
	d := dynamic.NewForConfigOrDie(cluster(t))
	if env == nil {
		t.Skip("needs the API server this process started (its token users)")
	}
	ns := testenv.Namespace(t, d)
	role := "outage-" + ns
	binding := d.Resource(schema.GroupVersionResource{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterrolebindings"})
	grant := func() {
		if err := env.GrantListWatch(t.Context(), role, outageUser, "", "configmaps"); err != nil {
			t.Fatal(err)
		}
	}
	revoke := func() {
		if err := binding.Delete(t.Context(), role, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		_ = binding.Delete(context.Background(), role, metav1.DeleteOptions{})
		_ = d.Resource(schema.GroupVersionResource{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterroles"}).
			Delete(context.Background(), role, metav1.DeleteOptions{})
	})
	grant()

	cutter := &watchCutter{}
	cfg := env.UserConfig(outageToken)
	cfg.Wrap(cutter.wrap)
	client, err := NewClient(cfg)
	if err != nil {
		t.Fatal(err)
	}
	logs := &testenv.Buffer{}
	m := NewManager(client, func(Key, *event.Event) {}, Options{Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	m.Set([]Watch{{Resource: event.Resource{Version: "v1", Resource: "configmaps", Kind: "ConfigMap", Namespaced: true}, Namespace: ns}}, ListsKnown)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx) }()
	defer func() { cancel(); <-done }()
	if !m.WaitForSync(t.Context()) {
		t.Fatal("no sync")
	}

	const warned, again = `level=WARN msg="cannot watch resource; retrying with backoff"`, `msg="watch failed again"`
	// failures returns the failures logged after offset, WARN or DEBUG.
	failures := func(offset int) []string {
		var out []string
		for _, line := range strings.Split(logs.String()[offset:], "\n") {
			if strings.Contains(line, warned) || strings.Contains(line, again) {
				out = append(out, line)
			}
		}
		return out
	}
	// outage revokes the user's RBAC and ends the running watch (revoking
	// does not end it), until the watch that follows is refused; it returns
	// the first failure logged.
	outage := func(what string) string {
		offset := len(logs.String())
		revoke()
		testenv.WaitFor(t, what+" to be logged", 30*time.Second, func() bool {
			if len(failures(offset)) > 0 {
				return true
			}
			cutter.cut() // the API server may still have let one watch in
			return false
		})
		return failures(offset)[0]
	}

	first := outage("the first outage")
	if !strings.Contains(first, warned) || !strings.Contains(first, "reason=Forbidden") {
		t.Fatalf("first outage logged as %s", first)
	}
	accepted := cutter.acceptedWatches()
	grant()
	testenv.WaitFor(t, "a watch accepted again", 30*time.Second, func() bool { return cutter.acceptedWatches() > accepted })
	second := outage("the second outage")
	if !strings.Contains(second, warned) || !strings.Contains(second, "reason=Forbidden") {
		t.Errorf("second outage logged as %s\nlogs:\n%s", second, logs)
	}
	if !strings.Contains(logs.String(), `msg="watching resource again"`) {
		t.Errorf("the end of the first outage is not logged:\n%s", logs)
	}
}
