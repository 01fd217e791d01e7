package main

import (
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/dynwatch/dynwatch/event"
	"github.com/dynwatch/dynwatch/state"
)

// runUntil starts dynwatch with cfg, waits for log and stops it; it returns
// the payloads. The state logs come once what the start found is committed and
// handed to the queues (the listing's commit follows its objects' commits),
// and a SIGTERM drains the queues: every event the start found is among the
// payloads, no moment to wait for them needed.
func runUntil(t *testing.T, cfg, log string) []event.Payload {
	t.Helper()
	p := startProc(t, "run", "--config", cfg, "--kubeconfig", cp.Kubeconfig)
	p.waitLog(log, 30*time.Second)
	if err := p.stop(syscall.SIGTERM); err != nil {
		t.Fatalf("run: %v\n%s", err, p.stderr.String())
	}
	return p.payloads()
}

var secretGVR = schema.GroupVersionResource{Version: "v1", Resource: "secrets"}

func putSecret(t *testing.T, d dynamic.Interface, ns, name, password string) {
	t.Helper()
	ri := d.Resource(secretGVR).Namespace(ns)
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Secret",
		"metadata": map[string]any{"name": name, "namespace": ns},
		"data":     map[string]any{"password": base64.StdEncoding.EncodeToString([]byte(password))}}}
	if old, err := ri.Get(t.Context(), name, metav1.GetOptions{}); err == nil {
		u.SetResourceVersion(old.GetResourceVersion())
		if _, err := ri.Update(t.Context(), u, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		return
	}
	if _, err := ri.Create(t.Context(), u, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// A rule that reads a Secret's data keeps only a digest of it in the state
// file, and a restart still tells a changed Secret from an unchanged one.
func TestStateKeepsNoSecretInClear(t *testing.T) {
	d, ns := setupTail(t)
	const first, second = "SENTINEL-first-7c1e", "SENTINEL-second-9d2f"
	dir := t.TempDir()
	db := filepath.Join(dir, "state.db")
	cfg := writeConfig(t, dir, fmt.Sprintf(`apiVersion: dynwatch/v1alpha1
state: {path: %s}
actions: [{name: out, log: {}}]
rules:
  - name: rotated
    resources: [{group: "", resource: secrets}]
    namespaces: [%s]
    on: [update]
    changed: [data, data.password]
    fields: {password: data.password}
    actions: [out]
`, db, ns))
	putSecret(t, d, ns, "db", first)
	putSecret(t, d, ns, "same", first)
	runUntil(t, cfg, "state: baseline recorded")
	putSecret(t, d, ns, "db", second)
	got := runUntil(t, cfg, "state: compared with the records")
	if len(got) != 1 || got[0].Name != "db" || got[0].Type != event.Update || !got[0].Replay {
		t.Fatalf("replays %+v, want one update of db", got)
	}
	if !slices.Equal(got[0].Changed, []string{"data", "data.password"}) || string(got[0].Fields["password"]) != `"<redacted>"` {
		t.Errorf("replayed update: changed %v, fields %s", got[0].Changed, got[0].Fields)
	}
	raw, err := os.ReadFile(db)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{first, second} {
		for _, form := range []string{s, base64.StdEncoding.EncodeToString([]byte(s))} {
			if strings.Contains(string(raw), form) {
				t.Errorf("the state file holds %q in clear", form)
			}
		}
	}
}

// A replayed update compares the recorded values path by path, query paths
// included: a change elsewhere does not fire a rule on changed images, a
// changed image does, as the same live updates would.
func TestReplayComparesQueryPaths(t *testing.T) {
	d, ns := setupTail(t)
	dir := t.TempDir()
	cfg := writeConfig(t, dir, fmt.Sprintf(`apiVersion: dynwatch/v1alpha1
state: {path: %s}
actions: [{name: out, log: {}}]
rules:
  - name: images
    resources: [{group: tail.example.com, resource: gadgets}]
    namespaces: [%s]
    on: [update]
    changed: ['spec.containers.#.image']
    actions: [out]
`, filepath.Join(dir, "state.db"), ns))
	containers := func(image string) []any {
		return []any{map[string]any{"name": "a", "image": image}, map[string]any{"name": "b", "image": "sidecar:1"}}
	}
	for _, name := range []string{"other", "image"} {
		if _, err := d.Resource(gadgetGVR).Namespace(ns).Create(t.Context(), gadget(ns, name, map[string]any{"n": int64(1), "containers": containers("app:1")}), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	runUntil(t, cfg, "state: baseline recorded")
	setN(t, d, ns, "other", 2)
	ri := d.Resource(gadgetGVR).Namespace(ns)
	u, err := ri.Get(t.Context(), "image", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	_ = unstructured.SetNestedSlice(u.Object, containers("app:2"), "spec", "containers")
	if _, err := ri.Update(t.Context(), u, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	got := runUntil(t, cfg, "state: compared with the records")
	if len(got) != 1 || got[0].Name != "image" || !slices.Equal(got[0].Changed, []string{"spec.containers.#.image"}) {
		t.Errorf("replays %+v, want one update of image with changed [spec.containers.#.image]", got)
	}
}

// Deleted and re-created under its name while dynwatch was down: the replay
// delivers the old uid's delete before the new uid's add, so a receiver keyed
// by name ends with the object there.
func TestReplayDeletesBeforeReAdd(t *testing.T) {
	d, ns := setupTail(t)
	dir := t.TempDir()
	cfg := writeConfig(t, dir, fmt.Sprintf(`apiVersion: dynwatch/v1alpha1
state: {path: %s}
actions: [{name: out, log: {}}]
rules: [{name: all, resources: [{group: tail.example.com, resource: gadgets}], namespaces: [%s], actions: [out]}]
`, filepath.Join(dir, "state.db"), ns))
	ri := d.Resource(gadgetGVR).Namespace(ns)
	// Several, so that the order cannot come out right by chance.
	names := []string{"a", "b", "c", "d", "e"}
	old := map[string]string{}
	for _, n := range names {
		u, err := ri.Create(t.Context(), gadget(ns, n, map[string]any{"n": int64(1)}), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		old[n] = string(u.GetUID())
	}
	runUntil(t, cfg, "state: baseline recorded")
	renewed := map[string]string{}
	for _, n := range names {
		if err := ri.Delete(t.Context(), n, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		u, err := ri.Create(t.Context(), gadget(ns, n, map[string]any{"n": int64(2)}), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		renewed[n] = string(u.GetUID())
	}
	got := runUntil(t, cfg, "state: compared with the records")
	byName := map[string][]string{}
	for _, p := range got {
		byName[p.Name] = append(byName[p.Name], string(p.Type)+" "+p.UID)
	}
	for _, n := range names {
		want := []string{"delete " + old[n], "add " + renewed[n]}
		if fmt.Sprint(byName[n]) != fmt.Sprint(want) {
			t.Errorf("%s: replayed %v, want %v", n, byName[n], want)
		}
	}
}

// Records follow the resource, not the rules' scopes: watched in namespace a,
// then cluster-wide (a delete in a is delivered live), then in a again, the
// delete is not replayed; records of namespaces no rule watches are dropped.
func TestScopeChangesReplayNoStaleDelete(t *testing.T) {
	d, a := setupTail(t)
	_, b := setupTail(t)
	dir := t.TempDir()
	db := filepath.Join(dir, "state.db")
	config := func(namespaces string) string {
		return writeConfig(t, dir, fmt.Sprintf(`apiVersion: dynwatch/v1alpha1
state: {path: %s}
actions: [{name: out, log: {}}]
rules: [{name: all, resources: [{group: tail.example.com, resource: gadgets}], %s actions: [out]}]
`, db, namespaces))
	}
	for _, ns := range []string{a, b} {
		if _, err := d.Resource(gadgetGVR).Namespace(ns).Create(t.Context(), gadget(ns, "x", map[string]any{"n": int64(1)}), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := d.Resource(gadgetGVR).Namespace(a).Create(t.Context(), gadget(a, "keep", map[string]any{"n": int64(1)}), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	runUntil(t, config("namespaces: ["+a+"],"), "state: baseline recorded")

	cfg := config("")
	p := startProc(t, "run", "--config", cfg, "--kubeconfig", cp.Kubeconfig)
	p.waitLog("all informers synced", 30*time.Second)
	if err := d.Resource(gadgetGVR).Namespace(a).Delete(t.Context(), "x", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for !slices.ContainsFunc(p.payloads(), func(pl event.Payload) bool { return pl.Type == event.Delete && pl.Namespace == a }) {
		if time.Now().After(deadline) {
			t.Fatalf("the live delete in %s did not come: %+v", a, p.payloads())
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err := p.stop(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}

	got := runUntil(t, config("namespaces: ["+a+"],"), "state: compared with the records")
	if len(got) != 0 {
		t.Errorf("back in namespace %s, the restart replayed %+v", a, got)
	}
	store, err := state.Open(db)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	var kept []string
	err = store.View(func(tx *state.Tx) error {
		for _, res := range tx.Resources() {
			err := tx.ForEach(res, func(uid string, r *state.Record) error {
				kept = append(kept, r.Namespace+"/"+r.Name)
				return nil
			})
			if err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// Only the object that stayed in a: not a's deleted x, not b's x.
	if want := []string{a + "/keep"}; !slices.Equal(kept, want) {
		t.Errorf("records kept %v, want %v (none of namespace %s, which no rule watches)", kept, want, b)
	}
}
