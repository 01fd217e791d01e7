package watcher

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dynwatch/dynwatch/event"
)

func TestReload(t *testing.T) {
	ns := namespace(t)
	base := fmt.Sprintf(`apiVersion: dynwatch/v1alpha1
actions: [{name: stdout, log: {}}]
rules:
  - name: cms
    resources: [{group: "", resource: configmaps}]
    namespaces: [%s]
    actions: [stdout]
`, ns)
	withSecrets := base + fmt.Sprintf(`  - name: secrets
    resources: [{group: "", resource: secrets}]
    namespaces: [%s]
    actions: [stdout]
`, ns)
	path := filepath.Join(t.TempDir(), "config.yaml")
	write := func(content string) {
		t.Helper()
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(base)
	r := start(t, base)
	create(t, cmGVR, ns, configMap(ns, "before", nil))
	r.out.wait(t, 1, eventWait)
	cmWatch := "/api/v1/namespaces/" + ns + "/configmaps"
	started := r.w.Manager().Started()

	// The file changes: FollowConfig notices and adds the secrets rule.
	follow := func(interval time.Duration, hup chan struct{}) (stop func()) {
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { r.w.FollowConfig(ctx, path, interval, hup); close(done) }()
		return func() { cancel(); <-done }
	}
	stopFollowing := follow(50*time.Millisecond, nil)
	write(withSecrets)
	waitUntil(t, "the secrets watch to start", 10*time.Second, func() bool { return watching(r.w, secretGVR) })
	waitUntil(t, "the secrets informer to sync", 10*time.Second, r.w.Manager().HasSynced)
	if n := r.w.Manager().Started() - started; n != 1 {
		t.Errorf("the reload started %d informers, want 1 (secrets only)", n)
	}
	if n := r.watches.get(cmWatch); n != 1 {
		t.Errorf("configmaps watched %d times, want once: the reload restarted it", n)
	}
	create(t, secretGVR, ns, map[string]any{"apiVersion": "v1", "kind": "Secret", "metadata": map[string]any{"name": "s1"}})
	create(t, cmGVR, ns, configMap(ns, "after", nil))
	r.out.wait(t, 3, eventWait)
	time.Sleep(500 * time.Millisecond)
	names := map[string]int{}
	for _, p := range r.out.snapshot() {
		names[p.Rule+"/"+p.Name]++
	}
	want := map[string]int{"cms/before": 1, "secrets/s1": 1, "cms/after": 1}
	if fmt.Sprint(names) != fmt.Sprint(want) {
		t.Errorf("events = %v, want %v (no duplicates of objects already seen)", names, want)
	}

	// A bad file: every problem logged, the running config stays.
	running := r.w.File()
	write(strings.Replace(withSecrets, "op: x", "", 1) + "    when: [{path: a, op: gtt, value: 1}]\n  - {name: cms}\n")
	waitUntil(t, "the invalid config to be reported", 10*time.Second, func() bool {
		return strings.Contains(r.logs.String(), "config not reloaded: the running config stays")
	})
	logs := r.logs.String()
	for _, want := range []string{`unknown operator \"gtt\"`, "field=rules[1].when[0].op", "field=rules[2].name", "duplicate rule name"} {
		if !strings.Contains(logs, want) {
			t.Errorf("logs lack %s", want)
		}
	}
	if r.w.File() != running || !watching(r.w, secretGVR) {
		t.Error("an invalid config replaced the running one")
	}
	create(t, cmGVR, ns, configMap(ns, "still", nil))
	r.out.waitMatch(t, "the event of a ConfigMap after the bad reload", eventWait, func(p event.Payload) bool { return p.Name == "still" })

	// SIGHUP with the rule removed: its informer stops, the other stays.
	write(base)
	stopFollowing()
	hup := make(chan struct{}, 1)
	defer follow(time.Hour, hup)()
	hup <- struct{}{}
	waitUntil(t, "the secrets watch to stop", 10*time.Second, func() bool { return !watching(r.w, secretGVR) })
	if !watching(r.w, cmGVR) || r.watches.get(cmWatch) != 1 {
		t.Error("the configmaps informer was stopped or restarted")
	}
}

// A rule added by a reload with onStart: all sees the objects that exist then,
// whether its resource's informer keeps running or starts with the reload; rules
// that were there before do not see them again.
func TestReloadAddedRuleOnStartAll(t *testing.T) {
	ns, other := namespace(t), namespace(t)
	// The cluster-wide rules select this test's objects by a label: the
	// cluster-wide list also holds every ConfigMap of the tests that run
	// beside this one, and firing on all of them only makes the test slow.
	mine := func(o map[string]any) map[string]any {
		o["metadata"].(map[string]any)["labels"] = map[string]any{"reload-test": ns}
		return o
	}
	create(t, cmGVR, ns, mine(configMap(ns, "existing", nil)))
	create(t, cmGVR, other, mine(configMap(other, "existing-other", nil)))
	base := fmt.Sprintf(`apiVersion: dynwatch/v1alpha1
actions: [{name: stdout, log: {}}]
rules:
  - name: old
    resources: [{group: "", resource: configmaps}]
    namespaces: [%s]
    onStart: all
    actions: [stdout]
`, ns)
	r := start(t, base)
	r.out.waitMatch(t, "the old rule's start", eventWait, func(p event.Payload) bool { return p.Rule == "old" })
	path := filepath.Join(t.TempDir(), "config.yaml")
	reload := func(content string) {
		t.Helper()
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := r.w.ReloadFile(path); err != nil {
			t.Fatal(err)
		}
	}
	// new-same shares the running informer of ns: it sees the cache.
	withSame := base + fmt.Sprintf(`  - name: new-same
    resources: [{group: "", resource: configmaps}]
    namespaces: [%s]
    onStart: all
    actions: [stdout]
`, ns)
	reload(withSame)
	r.out.waitMatch(t, "new-same", eventWait, func(p event.Payload) bool { return p.Rule == "new-same" && p.Name == "existing" })
	// new-all wants every namespace: one cluster-wide informer replaces the
	// namespaced one, and lists again; only new-all may fire on that list.
	reload(withSame + `  - name: new-all
    resources: [{group: "", resource: configmaps}]
    labelSelector: reload-test=` + ns + `
    onStart: all
    actions: [stdout]
  - name: new-quiet
    resources: [{group: "", resource: configmaps}]
    labelSelector: reload-test=` + ns + `
    actions: [stdout]
`)
	r.out.waitMatch(t, "new-all", eventWait, func(p event.Payload) bool { return p.Rule == "new-all" && p.Name == "existing-other" })
	r.out.waitMatch(t, "new-all", eventWait, func(p event.Payload) bool { return p.Rule == "new-all" && p.Name == "existing" })
	// And nothing more: a sentinel created now comes after that list in the
	// cluster-wide watch.
	create(t, cmGVR, other, mine(configMap(other, "sentinel", nil)))
	count := map[string]int{}
	for _, p := range r.settle(t, "stdout", "sentinel") {
		if p.Namespace == ns || p.Namespace == other {
			count[p.Rule+"/"+p.Name]++
		}
	}
	want := map[string]int{"old/existing": 1, "new-same/existing": 1, "new-all/existing": 1, "new-all/existing-other": 1}
	if fmt.Sprint(count) != fmt.Sprint(want) {
		t.Errorf("events %v, want %v", count, want)
	}
}

// ReadIfChanged, the one test of a changed config file, goes by content: the
// same bytes are no change, other bytes are, and a file that cannot be read
// is none (the running config stays).
func TestReadIfChanged(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(path, []byte("a"), 0o600); err != nil {
		t.Fatal(err)
	}
	if data, changed := ReadIfChanged(path, []byte("a")); changed || data != nil {
		t.Errorf("same content: %q, %v; want no change", data, changed)
	}
	if data, changed := ReadIfChanged(path, []byte("b")); !changed || string(data) != "a" {
		t.Errorf("other content: %q, %v; want %q, a change", data, changed, "a")
	}
	if data, changed := ReadIfChanged(filepath.Join(t.TempDir(), "gone.yaml"), []byte("a")); changed || data != nil {
		t.Errorf("no file: %q, %v; want no change", data, changed)
	}
}
