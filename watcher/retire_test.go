package watcher

import (
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"
)

// A webhook's connections are closed when its queue stops: when a reload
// changes its settings (the new settings have a transport of their own) and
// when a reload removes it. Before, they stayed open for the transport's idle
// timeout (90s) after each reload.
func TestReloadClosesARetiredWebhooksConnections(t *testing.T) {
	ns := namespace(t)
	var open, delivered atomic.Int64
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { delivered.Add(1) }))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		switch s {
		case http.StateNew:
			open.Add(1)
		case http.StateClosed, http.StateHijacked:
			open.Add(-1)
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)
	hook := func(timeout string) string {
		return fmt.Sprintf(`apiVersion: dynwatch/v1alpha1
shutdownGrace: 500ms
actions:
  - {name: hook, concurrency: 4, webhook: {url: %q, timeout: %s}}
  - {name: out, log: {}}
rules: [{name: cms, resources: [{group: "", resource: configmaps}], namespaces: [%s], actions: [hook, out]}]
`, srv.URL, timeout, ns)
	}
	r := start(t, hook("5s"))
	for i := range 8 {
		create(t, cmGVR, ns, configMap(ns, fmt.Sprint("cm-", i), nil))
	}
	waitUntil(t, "the events to be delivered", eventWait, func() bool { return delivered.Load() == 8 })
	if open.Load() == 0 {
		t.Fatal("no connection is open after the deliveries: nothing to test")
	}
	reload(t, r, hook("6s"))
	waitUntil(t, "the replaced settings' connections to close", 10*time.Second, func() bool { return open.Load() == 0 })

	create(t, cmGVR, ns, configMap(ns, "after-change", nil))
	waitUntil(t, "the event under the new settings", eventWait, func() bool { return delivered.Load() == 9 })
	if open.Load() == 0 {
		t.Fatal("no connection is open after the delivery under the new settings")
	}
	reload(t, r, fmt.Sprintf(`apiVersion: dynwatch/v1alpha1
shutdownGrace: 500ms
actions: [{name: out, log: {}}]
rules: [{name: cms, resources: [{group: "", resource: configmaps}], namespaces: [%s], actions: [out]}]
`, ns))
	waitUntil(t, "the removed webhook's connections to close", 10*time.Second, func() bool { return open.Load() == 0 })
}
