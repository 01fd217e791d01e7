package main

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
)

// variant is one kind of object the benchmark fills the cluster with.
type variant struct {
	name string
	gvr  schema.GroupVersionResource
	kind string
	// make returns object i.
	make func(ns string, i int) map[string]any
}

var (
	nsGVR  = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}
	crdGVR = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
)

var variants = map[string]variant{
	"deployments": {name: "deployments", gvr: schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}, kind: "Deployment", make: deployment},
	"crd":         {name: "crd", gvr: schema.GroupVersionResource{Group: "bench.dynwatch.io", Version: "v1", Resource: "workloads"}, kind: "Workload", make: customResource},
	"configmaps":  {name: "configmaps", gvr: schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}, kind: "ConfigMap", make: configMap},
}

// configMap is a ConfigMap with 1 KB of data (about 1.3 KB of JSON as served).
func configMap(ns string, i int) map[string]any {
	return map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": fmt.Sprintf("cm-%06d", i), "namespace": ns, "labels": labels(i)},
		"data":     map[string]any{"config.yaml": fmt.Sprintf("# %06d\n", i) + strings.Repeat("key: value-of-the-benchmark\n", 1016/28)},
	}
}

// podSpec is a pod template of the size real Deployments have: a container
// with env, resources, ports, probes and mounts (about 3.4 KB of JSON per
// Deployment as served, managedFields included).
func podSpec(i int) map[string]any { return podSpecOf(i, 1, 4) }

// podSpecOf is a pod template with the given containers and env variables each.
func podSpecOf(i, containers, envs int) map[string]any {
	container := func(name string) map[string]any {
		var env []any
		for j := range envs {
			env = append(env, map[string]any{"name": fmt.Sprintf("SETTING_%d", j), "value": fmt.Sprintf("value-%d-%d", i, j)})
		}
		return map[string]any{
			"name": name, "image": "registry.example.com/team/" + name + ":1.4." + fmt.Sprint(i%10),
			"args": []any{"--listen=:8080", "--log-level=info", "--config=/etc/app/config.yaml"},
			"env":  env,
			"ports": []any{map[string]any{"name": "http", "containerPort": int64(8080), "protocol": "TCP"},
				map[string]any{"name": "metrics", "containerPort": int64(9090), "protocol": "TCP"}},
			"resources":      map[string]any{"requests": map[string]any{"cpu": "100m", "memory": "128Mi"}, "limits": map[string]any{"cpu": "1", "memory": "512Mi"}},
			"readinessProbe": map[string]any{"httpGet": map[string]any{"path": "/readyz", "port": "http"}, "periodSeconds": int64(10)},
			"livenessProbe":  map[string]any{"httpGet": map[string]any{"path": "/healthz", "port": "http"}, "periodSeconds": int64(20)},
			"volumeMounts":   []any{map[string]any{"name": "config", "mountPath": "/etc/app"}},
		}
	}
	cs := []any{container("app")}
	for c := 1; c < containers; c++ {
		cs = append(cs, container(fmt.Sprintf("sidecar-%d", c)))
	}
	return map[string]any{
		"containers": cs,
		"volumes":    []any{map[string]any{"name": "config", "configMap": map[string]any{"name": fmt.Sprintf("app-%d", i)}}},
	}
}

func labels(i int) map[string]any {
	return map[string]any{"app": fmt.Sprintf("app-%d", i), "team": fmt.Sprintf("team-%d", i%20), "tier": "backend", "env": "bench"}
}

func deployment(ns string, i int) map[string]any {
	return map[string]any{
		"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{"name": fmt.Sprintf("app-%05d", i), "namespace": ns, "labels": labels(i),
			"annotations": map[string]any{"owner": "bench@example.com", "description": strings.Repeat("a deployment of the benchmark ", 4)}},
		"spec": map[string]any{
			"replicas": int64(1 + i%3),
			"selector": map[string]any{"matchLabels": map[string]any{"app": fmt.Sprintf("app-%d", i)}},
			"template": map[string]any{"metadata": map[string]any{"labels": labels(i)}, "spec": podSpec(i)},
		},
	}
}

func customResource(ns string, i int) map[string]any {
	return map[string]any{
		"apiVersion": "bench.dynwatch.io/v1", "kind": "Workload",
		"metadata": map[string]any{"name": fmt.Sprintf("wl-%05d", i), "namespace": ns, "labels": labels(i),
			"annotations": map[string]any{"owner": "bench@example.com", "description": strings.Repeat("a custom resource of the benchmark ", 4)}},
		"spec":   map[string]any{"replicas": int64(1 + i%3), "template": podSpec(i)},
		"status": map[string]any{"phase": "Ready"},
	}
}

// installCRD makes the custom resource's definition and waits until it is served.
func installCRD(ctx context.Context, d dynamic.Interface) error {
	crd := map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
		"metadata": map[string]any{"name": "workloads.bench.dynwatch.io"},
		"spec": map[string]any{
			"group": "bench.dynwatch.io", "scope": "Namespaced",
			"names": map[string]any{"plural": "workloads", "singular": "workload", "kind": "Workload"},
			"versions": []any{map[string]any{"name": "v1", "served": true, "storage": true,
				"schema": map[string]any{"openAPIV3Schema": map[string]any{"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}},
		},
	}
	if _, err := d.Resource(crdGVR).Create(ctx, &unstructured.Unstructured{Object: crd}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	gvr := variants["crd"].gvr
	for range 300 {
		if _, err := d.Resource(gvr).Namespace("default").List(ctx, metav1.ListOptions{Limit: 1}); err == nil {
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("%s is not served", gvr)
}

// populate creates objects from to n-1 of v in ns with a few parallel writers.
func populate(ctx context.Context, d dynamic.Interface, v variant, ns string, from, n int) error {
	obj := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": ns}}}
	if _, err := d.Resource(nsGVR).Create(ctx, obj, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	return parallel(n-from, 8, func(i int) error {
		u := &unstructured.Unstructured{Object: v.make(ns, from+i)}
		_, err := d.Resource(v.gvr).Namespace(ns).Create(ctx, u, metav1.CreateOptions{FieldManager: "bench"})
		if apierrors.IsAlreadyExists(err) {
			return nil
		}
		return err
	})
}

// parallel calls f(0) … f(n-1) from the given number of goroutines, and
// returns the first error (the goroutine that met it stops).
func parallel(n, workers int, f func(i int) error) error {
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for range workers {
		wg.Go(func() {
			for i := int(next.Add(1)) - 1; i < n; i = int(next.Add(1)) - 1 {
				if err := f(i); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	return <-errs
}
