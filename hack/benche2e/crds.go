package main

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
)

// manyCRDs is the variant of many resources: n namespaced custom resource
// definitions with one object each, watched by a rule on every resource.
var manyCRDs = variant{name: "crds", kind: "custom resources, one of each of many definitions"}

// emptyNS is the variant of a watcher with nothing to watch: one rule on the
// ConfigMaps of an empty namespace; its RSS is the idle floor.
var emptyNS = variant{name: "empty", gvr: variants["configmaps"].gvr, kind: "nothing"}

func crdGroup(i int) string { return fmt.Sprintf("g%03d.crds.bench.dynwatch.io", i) }

func crdGVRAt(i int) schema.GroupVersionResource {
	return schema.GroupVersionResource{Group: crdGroup(i), Version: "v1", Resource: "things"}
}

// installCRDs makes n definitions and one object of each in ns, and waits
// until every one is served.
func installCRDs(ctx context.Context, d dynamic.Interface, ns string, n int) error {
	obj := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": ns}}}
	if _, err := d.Resource(nsGVR).Create(ctx, obj, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	if err := parallel(n, 4, func(i int) error {
		crd := map[string]any{
			"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
			"metadata": map[string]any{"name": "things." + crdGroup(i)},
			"spec": map[string]any{
				"group": crdGroup(i), "scope": "Namespaced",
				"names": map[string]any{"plural": "things", "singular": "thing", "kind": "Thing"},
				"versions": []any{map[string]any{"name": "v1", "served": true, "storage": true,
					"schema": map[string]any{"openAPIV3Schema": map[string]any{"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}},
			},
		}
		_, err := d.Resource(crdGVR).Create(ctx, &unstructured.Unstructured{Object: crd}, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			return nil
		}
		return err
	}); err != nil {
		return err
	}
	return parallel(n, 4, func(i int) error {
		u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": crdGroup(i) + "/v1", "kind": "Thing",
			"metadata": map[string]any{"name": "one", "namespace": ns, "labels": labels(i)}, "spec": map[string]any{"size": int64(i)}}}
		var err error
		for range 600 {
			_, err = d.Resource(crdGVRAt(i)).Namespace(ns).Create(ctx, u, metav1.CreateOptions{})
			if err == nil || apierrors.IsAlreadyExists(err) {
				return nil
			}
			time.Sleep(100 * time.Millisecond)
		}
		return fmt.Errorf("%s is not served: %w", crdGVRAt(i), err)
	})
}
