package watcher

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dynwatch/dynwatch/event"
)

// backlogConfigs returns a config whose action hook posts to rc, and the same
// config without hook (and the rule that uses it).
func backlogConfigs(dbPath string, rc *receiver, ns, grace string) (with, without string) {
	head := fmt.Sprintf(`apiVersion: dynwatch/v1alpha1
state: {path: %s}
shutdownGrace: %s
`, dbPath, grace)
	out := fmt.Sprintf(`{name: all, resources: [{group: "", resource: configmaps}], namespaces: [%s], actions: [out]}`, ns)
	with = head + fmt.Sprintf(`actions: [{name: hook, webhook: {url: %q, retry: {max: 1000, initialBackoff: 50ms, maxBackoff: 200ms}}}, {name: out, log: {}}]
rules: [{name: cms, resources: [{group: "", resource: configmaps}], namespaces: [%s], actions: [hook]}, %s]
`, rc.srv.URL, ns, out)
	without = head + fmt.Sprintf(`actions: [{name: out, log: {}}]
rules: [%s]
`, out)
	return with, without
}

// backlogSetup makes a namespace, a receiver that is down, and the two
// configs of backlogConfigs for a state file in a fresh directory.
func backlogSetup(t *testing.T, grace string) (ns string, rc *receiver, dbPath, with, without string) {
	t.Helper()
	ns = namespace(t)
	rc = newReceiver(t)
	rc.down.Store(true)
	dbPath = filepath.Join(t.TempDir(), "state.db")
	with, without = backlogConfigs(dbPath, rc, ns, grace)
	return ns, rc, dbPath, with, without
}

// pendingOf returns how many deliveries of action wait on disk.
func pendingOf(t *testing.T, r *running, action string) int {
	t.Helper()
	n, err := r.w.durable.store.PendingActions()
	if err != nil {
		t.Fatal(err)
	}
	return n[action]
}

// seq lists the type and data.v of each payload of the object name.
func seq(ps []event.Payload, name string) string {
	var out []string
	for _, p := range ps {
		if p.Name == name {
			out = append(out, string(p.Type)+" "+dataV(p))
		}
	}
	return strings.Join(out, ", ")
}

// An action's backlog belongs to its name: removed by a reload while its
// receiver is down, then added again, it delivers what it held first, in
// order, in the same run, before the events that came after; whether its old
// queue had given up draining (short grace) or still drained (long grace).
func TestReAddedActionDeliversItsBacklogFirst(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, grace string }{
		{"old queue stopped", "200ms"},
		{"old queue draining", "30s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ns, rc, dbPath, with, without := backlogSetup(t, tc.grace)
			r, _ := runDurable(t, durableRun{config: with, dbPath: dbPath})
			compared(t, r)
			create(t, cmGVR, ns, configMap(ns, "x", map[string]any{"v": "0"}))
			setData(t, ns, "x", "1")
			waitUntil(t, "the backlog on disk", eventWait, func() bool { return pendingOf(t, r, "hook") == 2 })

			reload(t, r, without) // hook's queue drains for its grace, against a receiver that is down
			if tc.grace == "200ms" {
				waitUntil(t, "hook's old queue to stop", eventWait, func() bool {
					return strings.Contains(r.logs.String(), "stopped with undelivered events")
				})
			}
			setData(t, ns, "x", "2")
			r.out.waitMatch(t, "the update while hook is gone", eventWait, func(p event.Payload) bool { return dataV(p) == "2" })
			reload(t, r, with)
			setData(t, ns, "x", "3")
			waitUntil(t, "the new event on disk", eventWait, func() bool { return pendingOf(t, r, "hook") == 3 })
			rc.down.Store(false)
			waitUntil(t, "hook's deliveries", eventWait, func() bool { return len(rc.payloads()) >= 3 })
			waitUntil(t, "the backlog delivered", eventWait, func() bool { return pendingOf(t, r, "hook") == 0 })
			if got, want := seq(rc.payloads(), "x"), "add 0, update 1, update 3"; got != want {
				t.Errorf("hook delivered %q, want %q", got, want)
			}
		})
	}
}

// An action gone at the next start has its backlog dropped, with one warning
// that gives the count: adding it back later does not deliver it.
func TestBacklogOfActionGoneAtStartIsDropped(t *testing.T) {
	t.Parallel()
	ns, rc, dbPath, with, without := backlogSetup(t, "200ms")
	r, stop := runDurable(t, durableRun{config: with, dbPath: dbPath})
	compared(t, r)
	create(t, cmGVR, ns, configMap(ns, "z", map[string]any{"v": "0"}))
	waitUntil(t, "the add on disk", eventWait, func() bool { return pendingOf(t, r, "hook") == 1 })
	stop()

	r, stop = runDurable(t, durableRun{config: without, dbPath: dbPath})
	compared(t, r)
	warned := 0
	for _, l := range strings.Split(r.logs.String(), "\n") {
		if strings.Contains(l, "level=WARN") && strings.Contains(l, "action=hook") && strings.Contains(l, "events=1") {
			warned++
		}
	}
	if warned != 1 || pendingOf(t, r, "hook") != 0 {
		t.Errorf("%d warnings giving the count, %d still on disk; want 1 and 0:\n%s", warned, pendingOf(t, r, "hook"), r.logs.String())
	}
	stop()

	rc.down.Store(false)
	r, _ = runDurable(t, durableRun{config: with, dbPath: dbPath})
	compared(t, r)
	setData(t, ns, "z", "1")
	waitUntil(t, "the update", eventWait, func() bool { return len(rc.payloads()) >= 1 })
	if got := seq(rc.payloads(), "z"); got != "update 1" {
		t.Errorf("hook delivered %q, want only the update", got)
	}
}

// Removed by a reload and back at the next start, an action delivers the
// backlog its name kept on disk first, before newer events of the same object.
func TestRemovedActionBacklogDeliveredAfterRestart(t *testing.T) {
	t.Parallel()
	ns, rc, dbPath, with, without := backlogSetup(t, "200ms")
	r, stop := runDurable(t, durableRun{config: with, dbPath: dbPath})
	compared(t, r)
	create(t, cmGVR, ns, configMap(ns, "y", map[string]any{"v": "0"}))
	waitUntil(t, "the add on disk", eventWait, func() bool { return pendingOf(t, r, "hook") == 1 })
	reload(t, r, without)
	stop()

	rc.down.Store(false)
	r, _ = runDurable(t, durableRun{config: with, dbPath: dbPath})
	compared(t, r)
	setData(t, ns, "y", "1")
	waitUntil(t, "both events", eventWait, func() bool { return len(rc.payloads()) >= 2 })
	if got, want := seq(rc.payloads(), "y"), "add 0, update 1"; got != want {
		t.Errorf("hook delivered %q, want %q", got, want)
	}
}
