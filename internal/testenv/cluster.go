package testenv

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
)

// CompactEtcd compacts etcd's history up to its current revision, through
// etcd's JSON gateway: a watch that resumes from an older resourceVersion then
// gets 410 Gone (when the API server's watch cache is off) and its informer
// relists.
func (e *Env) CompactEtcd(ctx context.Context) error {
	post := func(path, body string, out any) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.EtcdURL+path, strings.NewReader(body))
		if err != nil {
			return err
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			b, _ := io.ReadAll(resp.Body)
			return fmt.Errorf("etcd %s: %s: %s", path, resp.Status, b)
		}
		return json.NewDecoder(resp.Body).Decode(out)
	}
	var r struct {
		Header struct {
			Revision string `json:"revision"`
		} `json:"header"`
	}
	if err := post("/v3/kv/range", `{"key":"AA=="}`, &r); err != nil {
		return err
	}
	var ignored map[string]any
	return post("/v3/kv/compaction", `{"revision":"`+r.Header.Revision+`","physical":true}`, &ignored)
}

// GrantListWatch lets user list and watch resources of group in every
// namespace, through a ClusterRole and ClusterRoleBinding named name.
func (e *Env) GrantListWatch(ctx context.Context, name, user, group string, resources ...string) error {
	d, err := dynamic.NewForConfig(e.Config)
	if err != nil {
		return err
	}
	res := make([]any, len(resources))
	for i, r := range resources {
		res[i] = r
	}
	objs := []map[string]any{
		{"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": map[string]any{"name": name},
			"rules": []any{map[string]any{"apiGroups": []any{group}, "resources": res, "verbs": []any{"list", "watch"}}}},
		{"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "metadata": map[string]any{"name": name},
			"roleRef":  map[string]any{"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name},
			"subjects": []any{map[string]any{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": user}}},
	}
	for _, o := range objs {
		gvr := schema.GroupVersionResource{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: strings.ToLower(o["kind"].(string)) + "s"}
		_, err := d.Resource(gvr).Create(ctx, &unstructured.Unstructured{Object: o}, metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
	}
	return nil
}
