package dyninformer

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer/streaming"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	restclientwatch "k8s.io/client-go/rest/watch"
)

func TestParseListGivesItemsTheListsKind(t *testing.T) {
	typed := `{"kind":"DeploymentList","apiVersion":"apps/v1","metadata":{"resourceVersion":"42","continue":"c1","remainingItemCount":5},"items":[` +
		`{"metadata":{"name":"a","namespace":"n","uid":"1","resourceVersion":"40","managedFields":[{"manager":"m"}]},"spec":{"replicas":1}},` +
		`{"metadata":{"name":"b","namespace":"n","uid":"2","resourceVersion":"41"},"spec":{"replicas":2}}]}`
	var l List
	if err := parseList([]byte(typed), &l, nil); err != nil {
		t.Fatal(err)
	}
	if l.ResourceVersion != "42" || l.Continue != "c1" || l.RemainingItemCount == nil || *l.RemainingItemCount != 5 || len(l.Items) != 2 {
		t.Fatalf("list = %+v", l)
	}
	a := decodeMap(t, l.Items[0].(*Object).raw)
	if a["kind"] != "Deployment" || a["apiVersion"] != "apps/v1" || a["metadata"].(map[string]any)["managedFields"] != nil {
		t.Fatalf("item = %v", a)
	}
	// An unstructured list (custom resources) sorts its keys: the items come
	// before the list's kind, and carry their own.
	cr := `{"apiVersion":"ex.com/v1","items":[{"apiVersion":"ex.com/v1","kind":"Widget","metadata":{"name":"w","uid":"3","resourceVersion":"9"}}],"kind":"WidgetList","metadata":{"resourceVersion":"10"}}`
	var l2 List
	if err := parseList([]byte(cr), &l2, nil); err != nil {
		t.Fatal(err)
	}
	if got := decodeMap(t, l2.Items[0].(*Object).raw); got["kind"] != "Widget" || l2.ResourceVersion != "10" || len(got) != 3 {
		t.Fatalf("item = %v, list rv %q", got, l2.ResourceVersion)
	}
	var empty List
	if err := parseList([]byte(`{"kind":"ConfigMapList","apiVersion":"v1","metadata":{"resourceVersion":"5"},"items":[]}`), &empty, nil); err != nil || empty.Items == nil || len(empty.Items) != 0 {
		t.Fatalf("empty list = %+v, %v", empty, err)
	}
	for _, bad := range []string{`{"kind":"X","items":[{"metadata":{}}`, `[1]`, `{"items":[{"metadata":{"name":"a"}},`, `{"items":{}}`} {
		if err := parseList([]byte(bad), &List{}, nil); err == nil {
			t.Errorf("parseList(%s): no error", bad)
		}
	}
}

// TestWatchDecodingThroughClientGo runs the stream through client-go's own
// streaming and watch decoders with this package's framer and codec, as the
// REST client does: events carry Objects, errors a Status.
func TestWatchDecodingThroughClientGo(t *testing.T) {
	stream, _ := watchStream()
	fr := jsonFramer{}.NewFrameReader(&oneByte{data: stream, n: 7})
	dec := restclientwatch.NewDecoder(streaming.NewDecoder(fr, rawCodec{}), rawCodec{})
	// Keep every event before looking at any: the decoder reuses its buffer
	// for the next frame, and nothing an event holds may point into it.
	type ev struct {
		typ watch.EventType
		obj runtime.Object
	}
	var evs []ev
	for {
		typ, obj, err := dec.Decode()
		if err != nil {
			break
		}
		evs = append(evs, ev{typ, obj})
	}
	var got []string
	for _, e := range evs {
		typ := e.typ
		switch o := e.obj.(type) {
		case *Object:
			got = append(got, fmt.Sprintf("%s %s %s %v", typ, o.GetName(), o.GetResourceVersion(), bytes.Contains(o.raw, []byte("managedFields"))))
		default:
			err := apierrors.FromObject(e.obj)
			got = append(got, fmt.Sprintf("%s expired=%v", typ, apierrors.IsResourceExpired(err)))
		}
	}
	want := []string{"ADDED a 5 false", "MODIFIED a 6 false", "BOOKMARK  7 false", "DELETED a 8 false", string(watch.Error) + " expired=true"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("events\n%q\nwant\n%q", got, want)
	}
}

// TestListBodiesThatAreNoList: a 200 whose body has no kind or no items (a
// proxy's error page in JSON) is an error, not a list of nothing; a Status in
// place of a list is the error it says, with its reason.
func TestListBodiesThatAreNoList(t *testing.T) {
	t.Parallel()
	for _, body := range []string{
		`{"error":"upstream timeout"}`,
		`{}`,
		`{"kind":"ConfigMapList","apiVersion":"v1","metadata":{"resourceVersion":"5"}}`,
		`{"apiVersion":"v1","metadata":{"resourceVersion":"5"},"items":[]}`,
		`{"kind":"","apiVersion":"v1","items":[]}`,
		`{"kind":"Status","apiVersion":"v1","status":"Success","code":200}`,
	} {
		if err := parseList([]byte(body), &List{}, nil); err == nil {
			t.Errorf("parseList(%s): no error", body)
		}
		if obj, _, err := (rawCodec{}).Decode([]byte(body), nil, &List{}); err == nil {
			if _, ok := obj.(*metav1.Status); !ok {
				t.Errorf("Decode(%s) into a List = %T, no error", body, obj)
			}
		}
	}
	// Through the REST client, as an informer lists.
	bodies := map[string]string{
		"/api/v1/configmaps":     `{"error":"upstream timeout"}`,
		"/api/v1/secrets":        `{"kind":"SecretList","apiVersion":"v1","metadata":{"resourceVersion":"5"}}`,
		"/apis/apps/v1/replicas": `{"reason":"Expired","code":410,"status":"Failure","message":"too old","kind":"Status"}`,
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, bodies[r.URL.Path])
	}))
	defer srv.Close()
	c, err := NewClient(&rest.Config{Host: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	for _, gvr := range []schema.GroupVersionResource{
		{Version: "v1", Resource: "configmaps"}, {Version: "v1", Resource: "secrets"}, {Group: "apps", Version: "v1", Resource: "replicas"},
	} {
		l, err := c.List(t.Context(), gvr, "", metav1.ListOptions{})
		if err == nil {
			t.Errorf("list %s: %d items and no error", gvr, len(l.Items))
		}
		if gvr.Group == "apps" && !apierrors.IsResourceExpired(err) {
			t.Errorf("list %s: %v, want the Status's Expired", gvr, err)
		}
	}
}

// TestStatusInAnyKeyOrder: a Status is told as apierrors tells it, whatever
// the order of its keys and with apiVersion v1, meta.k8s.io/v1 or none, so a
// 410 keeps its reason Expired; kind Status of another group is an object.
func TestStatusInAnyKeyOrder(t *testing.T) {
	t.Parallel()
	statuses := []string{
		`{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"too old resource version","reason":"Expired","code":410}`,
		`{"kind":"Status","code":410,"reason":"Expired"}`,
		`{"code":410,"reason":"Expired","status":"Failure","kind":"Status","apiVersion":"v1"}`,
		`{"apiVersion":"meta.k8s.io/v1","kind":"Status","status":"Failure","reason":"Expired","code":410}`,
		`{"metadata":{},"reason":"Expired","apiVersion":"meta.k8s.io/v1","code":410,"kind":"Status"}`,
	}
	for _, s := range statuses {
		obj, _, err := (rawCodec{}).Decode([]byte(s), nil, nil)
		if err != nil {
			t.Fatalf("%s: %v", s, err)
		}
		if err := apierrors.FromObject(obj); !apierrors.IsResourceExpired(err) {
			t.Errorf("%s: decoded as %T (%v), want a Status of reason Expired", s, obj, err)
		}
	}
	for _, s := range []string{
		`{"kind":"Status","apiVersion":"example.com/v1","metadata":{"name":"s"}}`,
		`{"metadata":{"name":"s"},"apiVersion":"example.com/v1","kind":"Status"}`,
		`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"Status"}}`,
	} {
		if obj, _, err := (rawCodec{}).Decode([]byte(s), nil, nil); err != nil {
			t.Errorf("%s: %v", s, err)
		} else if _, ok := obj.(*Object); !ok {
			t.Errorf("%s: decoded as %T, want an Object", s, obj)
		}
	}
	// In a watch stream, through client-go's decoders, as the reflector sees it.
	var stream bytes.Buffer
	for _, s := range statuses {
		fmt.Fprintf(&stream, `{"object":%s,"type":"ERROR"}`+"\n", s)
	}
	dec := restclientwatch.NewDecoder(streaming.NewDecoder(jsonFramer{}.NewFrameReader(io.NopCloser(&stream)), rawCodec{}), rawCodec{})
	for i := range statuses {
		typ, obj, err := dec.Decode()
		if err != nil {
			t.Fatalf("event %d: %v", i, err)
		}
		if err := apierrors.FromObject(obj); typ != watch.Error || !apierrors.IsResourceExpired(err) {
			t.Errorf("event %d: %s %T (%v), want an ERROR of reason Expired", i, typ, obj, err)
		}
	}
}
