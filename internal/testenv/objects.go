package testenv

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
)

// namespaceCount counts the namespaces Namespace made in this process.
var namespaceCount atomic.Uint64

// Namespace creates a namespace for one test through d and returns its name:
// the test's name, lower-cased and cut to 45 characters, and a number, so that
// tests sharing a cluster keep their objects apart.
func Namespace(t testing.TB, d dynamic.Interface) string {
	t.Helper()
	name := strings.ToLower(strings.NewReplacer("/", "-", "_", "-").Replace(t.Name()))
	if len(name) > 45 { // a namespace's name has at most 63
		name = name[:45]
	}
	// Unique on one API server across tests, test processes and reruns: the
	// process's id and a counter, not a clock's low digits.
	name = fmt.Sprintf("%s-%d-%d", strings.Trim(name, "-"), os.Getpid(), namespaceCount.Add(1))
	obj := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": name}}}
	namespaces := schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}
	if _, err := d.Resource(namespaces).Create(context.Background(), obj, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	return name
}

// ConfigMap is a ConfigMap named name in namespace ns holding data (none when
// nil), as the object a dynamic client creates.
func ConfigMap(ns, name string, data map[string]any) map[string]any {
	return map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": name, "namespace": ns}, "data": data}
}
