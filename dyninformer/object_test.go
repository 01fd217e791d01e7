package dyninformer

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// withoutManagedFields is the reference: decode, delete, compare.
func withoutManagedFields(t testing.TB, b []byte) map[string]any {
	m := decodeMap(t, b)
	if md, ok := m["metadata"].(map[string]any); ok {
		delete(md, "managedFields")
	}
	return m
}

func TestParseObjectCutsManagedFields(t *testing.T) {
	mf := `"managedFields":[{"manager":"kubectl","operation":"Update","fieldsV1":{"f:data":{".":{},"f:a":{}}}}]`
	for name, src := range map[string]string{
		"last":    `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","namespace":"n","uid":"u1","resourceVersion":"7",` + mf + `},"data":{"a":"}{\"]"}}`,
		"first":   `{"apiVersion":"v1","kind":"ConfigMap","metadata":{` + mf + `,"name":"a","namespace":"n","uid":"u1","resourceVersion":"7"},"data":{"a":"x"}}`,
		"middle":  `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","namespace":"n",` + mf + `,"uid":"u1","resourceVersion":"7"}}`,
		"only":    `{"apiVersion":"v1","kind":"ConfigMap","metadata":{` + mf + `}}`,
		"absent":  `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","namespace":"n","uid":"u1","resourceVersion":"7"}}`,
		"spaced":  "\n {\n \"apiVersion\" : \"v1\", \"kind\":\"ConfigMap\",\n \"metadata\" : { \"name\" : \"a\" ,\n " + mf + " , \"namespace\":\"n\",\"uid\":\"u1\",\"resourceVersion\":\"7\" } }\n",
		"escaped": `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a\u0062","namespace":"n","uid":"u1","resourceVersion":"7",` + mf + `}}`,
	} {
		t.Run(name, func(t *testing.T) {
			o, err := parseObject([]byte(src), "", "", nil)
			if err != nil {
				t.Fatal(err)
			}
			if got, want := decodeMap(t, o.raw), withoutManagedFields(t, []byte(src)); !reflect.DeepEqual(got, want) {
				t.Fatalf("got\n%s\nwant the source without managedFields:\n%v", o.raw, want)
			}
			if cap(o.raw) != len(o.raw) {
				t.Errorf("cap %d for %d bytes: the copy should be exactly its size", cap(o.raw), len(o.raw))
			}
			if name == "only" {
				return
			}
			wantName := "a"
			if name == "escaped" {
				wantName = "ab"
			}
			if o.GetName() != wantName || o.GetNamespace() != "n" || o.GetUID() != "u1" || o.GetResourceVersion() != "7" {
				t.Errorf("metadata = %q %q %q %q", o.GetName(), o.GetNamespace(), o.GetUID(), o.GetResourceVersion())
			}
		})
	}
}

func TestParseObjectKeepsNoReferenceToItsSource(t *testing.T) {
	src := []byte(`{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"a","namespace":"n","uid":"u","resourceVersion":"1"}}`)
	o, err := parseObject(src, "", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := range src {
		src[i] = 'x' // the watch decoder reuses its buffer for the next frame
	}
	if o.GetName() != "a" || o.GetNamespace() != "n" || o.GetUID() != "u" || o.GetResourceVersion() != "1" || !json.Valid(o.raw) {
		t.Fatalf("object changed with its source: %q %q %q %q %s", o.GetName(), o.GetNamespace(), o.GetUID(), o.GetResourceVersion(), o.raw)
	}
}

func TestObjectReadsTheRestOfItsMetadataFromTheBytes(t *testing.T) {
	src := `{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"a","generation":3,"labels":{"app":"x","a.b/c":"d"},` +
		`"annotations":{"k8s.io/initial-events-end":"true"},"finalizers":["f"],"creationTimestamp":"2026-01-02T03:04:05Z",` +
		`"ownerReferences":[{"apiVersion":"v1","kind":"Pod","name":"p","uid":"pu"}]}}`
	o, err := parseObject([]byte(src), "", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(o.GetLabels(), map[string]string{"app": "x", "a.b/c": "d"}) ||
		o.GetAnnotations()[metav1.InitialEventsAnnotationKey] != "true" || o.GetGeneration() != 3 ||
		!reflect.DeepEqual(o.GetFinalizers(), []string{"f"}) || o.GetCreationTimestamp().Year() != 2026 ||
		len(o.GetOwnerReferences()) != 1 || o.GetOwnerReferences()[0].Name != "p" || o.GetDeletionTimestamp() != nil {
		t.Fatalf("metadata read wrong: %v %v %d %v %v %v", o.GetLabels(), o.GetAnnotations(), o.GetGeneration(), o.GetFinalizers(), o.GetCreationTimestamp(), o.GetOwnerReferences())
	}
	u, err := o.Unstructured()
	if err != nil || u.GetName() != "a" || u.GetKind() != "ConfigMap" || u.GetLabels()["app"] != "x" {
		t.Fatalf("Unstructured() = %v, %v", u, err)
	}
	u.SetName("changed")
	if o.GetName() != "a" || !bytes.Contains(o.raw, []byte(`"name":"a"`)) {
		t.Fatal("changing the decoded copy changed the cached object")
	}
}
