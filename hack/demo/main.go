// Command demo starts a local control plane, installs a demo CRD and a few
// objects, runs `dynwatch run --config config.example.yaml` against it, and keeps
// changing objects so that events show up. Ctrl-C stops it all. `make demo` runs it.
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"sync"
	"syscall"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/dynwatch/dynwatch/internal/testenv"
)

var (
	nsGVR     = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}
	cmGVR     = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	crdGVR    = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	widgetGVR = schema.GroupVersionResource{Group: "demo.dynwatch.io", Version: "v1", Resource: "widgets"}
)

func say(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "demo: "+format+"\n", args...)
}

func main() {
	bin := flag.String("dynwatch", "bin/dynwatch", "the dynwatch binary")
	config := flag.String("config", "config.example.yaml", "the config dynwatch runs")
	steps := flag.Int("steps", 0, "how many changes to make before idling until Ctrl-C (0: keep changing until Ctrl-C)")
	interval := flag.Duration("interval", 3*time.Second, "the time between two changes")
	flag.Parse()
	if *interval <= 0 {
		say("-interval must be positive, got %s", *interval)
		os.Exit(2)
	}
	if err := run(*bin, *config, pace{every: *interval, steps: *steps}); err != nil {
		say("%v", err)
		os.Exit(1)
	}
}

// pace is how the demo changes objects: one change every `every`, and after
// `steps` changes (0: never) no more.
type pace struct {
	every time.Duration
	steps int
}

func run(bin, config string, p pace) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	say("starting etcd and kube-apiserver on loopback")
	// The control plane does not get the terminal's Ctrl-C: dynwatch needs
	// it for a clean stop, after which the demo stops it.
	env, err := testenv.Start(testenv.Options{OwnProcessGroup: true})
	if err != nil {
		return err
	}
	defer func() {
		say("stopping the control plane")
		env.Stop()
	}()
	say("API server at %s; kubeconfig %s", env.URL, env.Kubeconfig)

	d := dynamic.NewForConfigOrDie(env.Config)
	if err := setup(ctx, d); err != nil {
		return err
	}

	say("running: %s run --config %s --kubeconfig %s", bin, config, env.Kubeconfig)
	cmd := exec.Command(bin, "run", "--config", config, "--kubeconfig", env.Kubeconfig)
	cmd.Stdout = os.Stdout
	cmd.Stderr = &upWriter{w: os.Stderr, up: func() { tryNext(bin, env.Kubeconfig) }}
	// dynwatch gets its own process group: the demo forwards Ctrl-C itself, after
	// which it still needs the API server for a clean stop.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start dynwatch (did `make build` run?): %w", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()

	go changeObjects(ctx, d, p)

	select {
	case err := <-exited:
		return fmt.Errorf("dynwatch exited early: %v", err)
	case <-ctx.Done():
	}
	say("Ctrl-C: stopping dynwatch")
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-exited:
		if err != nil {
			return fmt.Errorf("dynwatch: %w", err)
		}
		say("dynwatch stopped cleanly")
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		return errors.New("dynwatch did not stop within 30s")
	}
	return nil
}

func obj(m map[string]any) *unstructured.Unstructured { return &unstructured.Unstructured{Object: m} }

// tryNext prints three things to try against the demo's API server.
func tryNext(bin, kubeconfig string) {
	say("dynwatch is up. Three things to try, in another terminal:\n"+
		"  %[1]s tail widgets -n demo --where 'status.phase == Ready' --columns phase=status.phase,size=spec.size --kubeconfig %[2]s\n"+
		"  %[1]s audit --config config.example.yaml --kubeconfig %[2]s\n"+
		"  %[1]s check --cluster --config config.example.yaml --kubeconfig %[2]s", bin, kubeconfig)
}

func widget(name string, size int64, color string) *unstructured.Unstructured {
	return obj(map[string]any{
		"apiVersion": "demo.dynwatch.io/v1", "kind": "Widget",
		"metadata": map[string]any{"name": name, "namespace": "demo"},
		"spec":     map[string]any{"size": size, "color": color},
	})
}

func setup(ctx context.Context, d dynamic.Interface) error {
	say("creating namespace demo, the Widget CRD, two widgets and a ConfigMap")
	if _, err := d.Resource(nsGVR).Create(ctx, obj(map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": "demo"}}), metav1.CreateOptions{}); err != nil {
		return err
	}
	crd := obj(map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
		"metadata": map[string]any{"name": "widgets.demo.dynwatch.io"},
		"spec": map[string]any{
			"group": "demo.dynwatch.io", "scope": "Namespaced",
			"names": map[string]any{"plural": "widgets", "singular": "widget", "kind": "Widget", "shortNames": []any{"wg"}},
			"versions": []any{map[string]any{"name": "v1", "served": true, "storage": true,
				"schema": map[string]any{"openAPIV3Schema": map[string]any{"type": "object", "properties": map[string]any{
					"spec": map[string]any{"type": "object", "properties": map[string]any{
						"size": map[string]any{"type": "integer"}, "color": map[string]any{"type": "string"}}},
					"status": map[string]any{"type": "object", "properties": map[string]any{
						"phase": map[string]any{"type": "string"}}}}}},
				"subresources": map[string]any{"status": map[string]any{}}}},
		},
	})
	if _, err := d.Resource(crdGVR).Create(ctx, crd, metav1.CreateOptions{}); err != nil {
		return err
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		if _, err := d.Resource(widgetGVR).Namespace("demo").List(ctx, metav1.ListOptions{}); err == nil {
			break
		} else if time.Now().After(deadline) {
			return fmt.Errorf("the Widget CRD is not served: %w", err)
		}
	}
	for _, w := range []*unstructured.Unstructured{widget("small", 2, "blue"), widget("large", 5, "red")} {
		if _, err := d.Resource(widgetGVR).Namespace("demo").Create(ctx, w, metav1.CreateOptions{}); err != nil {
			return err
		}
	}
	cm := obj(map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "settings", "namespace": "demo", "labels": map[string]any{"demo": "true"}},
		"data":     map[string]any{"mode": "on"}})
	_, err := d.Resource(cmGVR).Namespace("demo").Create(ctx, cm, metav1.CreateOptions{})
	return err
}

// changeObjects makes one change every p.every, each saying what it expects,
// until Ctrl-C (or p.steps changes): the README has you run tail beside it.
// The cycle of changes leaves the objects as it found them (a widget it
// creates it deletes three changes later), so it can go on for hours.
func changeObjects(ctx context.Context, d dynamic.Interface, p pace) {
	widgets := d.Resource(widgetGVR).Namespace("demo")
	cms := d.Resource(cmGVR).Namespace("demo")
	set := func(ri dynamic.ResourceInterface, name string, value any, path ...string) error {
		u, err := ri.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if err := unstructured.SetNestedField(u.Object, value, path...); err != nil {
			return err
		}
		_, err = ri.Update(ctx, u, metav1.UpdateOptions{})
		return err
	}
	changes := []struct {
		what string
		do   func(i int) error
	}{
		{"grow widget small to size 4 (big-widgets fires: size > 3)", func(int) error { return set(widgets, "small", int64(4), "spec", "size") }},
		{"flip widget large's status.phase to Ready (through the status subresource)", func(int) error { return setPhase(ctx, widgets, "large", "Ready") }},
		{"switch ConfigMap settings to mode off (configmap-mode fires)", func(int) error { return set(cms, "settings", "off", "data", "mode") }},
		{"add a label to ConfigMap settings (nothing fires: data.mode unchanged)", func(i int) error {
			return set(cms, "settings", fmt.Sprint(i), "metadata", "labels", "touched")
		}},
		{"create widget huge-N with size 9 (big-widgets fires)", func(i int) error {
			_, err := widgets.Create(ctx, widget(fmt.Sprintf("huge-%d", i), 9, "green"), metav1.CreateOptions{})
			return err
		}},
		{"shrink widget small to size 1 (nothing fires: size <= 3)", func(int) error { return set(widgets, "small", int64(1), "spec", "size") }},
		{"switch ConfigMap settings back to mode on (configmap-mode fires)", func(int) error { return set(cms, "settings", "on", "data", "mode") }},
		{"delete widget huge-N (big-widgets fires a delete)", func(i int) error {
			return widgets.Delete(ctx, fmt.Sprintf("huge-%d", i-3), metav1.DeleteOptions{})
		}},
		{"flip widget large's status.phase to Pending", func(int) error { return setPhase(ctx, widgets, "large", "Pending") }},
	}
	t := time.NewTicker(p.every)
	defer t.Stop()
	for i := 0; p.steps == 0 || i < p.steps; i++ {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		c := changes[i%len(changes)]
		say("change %d: %s", i+1, c.what)
		if err := c.do(i); err != nil {
			say("change %d failed: %v", i+1, err)
		}
	}
	say("done changing objects; dynwatch keeps running until Ctrl-C")
}

// upWriter passes dynwatch's logs on and calls up once, when dynwatch says its
// informers have synced: then it is up.
type upWriter struct {
	w    io.Writer
	up   func()
	once sync.Once
}

func (u *upWriter) Write(p []byte) (int, error) {
	n, err := u.w.Write(p)
	if bytes.Contains(p, []byte("all informers synced")) {
		u.once.Do(u.up)
	}
	return n, err
}

// setPhase sets a widget's status.phase through the status subresource, as a
// controller would.
func setPhase(ctx context.Context, ri dynamic.ResourceInterface, name, phase string) error {
	u, err := ri.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	if err := unstructured.SetNestedField(u.Object, phase, "status", "phase"); err != nil {
		return err
	}
	_, err = ri.UpdateStatus(ctx, u, metav1.UpdateOptions{})
	return err
}
