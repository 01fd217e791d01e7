package dyninformer

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	serializerjson "k8s.io/apimachinery/pkg/runtime/serializer/json"
	"k8s.io/apimachinery/pkg/runtime/serializer/streaming"
	restclientwatch "k8s.io/client-go/rest/watch"
)

// benchDeployment is a Deployment as the API server sends it (about 3.5 KB,
// managedFields half of it); withKind: as in a watch event, not a list item.
func benchDeployment(i int, withKind bool) string {
	kind := ""
	if withKind {
		kind = `"kind":"Deployment","apiVersion":"apps/v1",`
	}
	env := make([]string, 4)
	fenv := make([]string, 4)
	for j := range env {
		env[j] = fmt.Sprintf(`{"name":"SETTING_%d","value":"value-%d-%d"}`, j, i, j)
		fenv[j] = fmt.Sprintf(`"k:{\"name\":\"SETTING_%d\"}":{".":{},"f:name":{},"f:value":{}}`, j)
	}
	return fmt.Sprintf(`{%s"metadata":{"name":"app-%05d","namespace":"bench","uid":"6f1c0a52-%08d-4b7e-9d7a-3f2c1b0e9a87","resourceVersion":"%d","generation":1,"creationTimestamp":"2026-11-30T03:00:00Z","labels":{"app":"app-%d","env":"bench","team":"team-%d","tier":"backend"},"annotations":{"deployment.kubernetes.io/revision":"1","owner":"bench@example.com"},`+
		`"managedFields":[{"manager":"bench","operation":"Update","apiVersion":"apps/v1","time":"2026-11-30T03:00:00Z","fieldsType":"FieldsV1","fieldsV1":{"f:metadata":{"f:annotations":{".":{},"f:owner":{}},"f:labels":{".":{},"f:app":{},"f:env":{},"f:team":{},"f:tier":{}}},"f:spec":{"f:progressDeadlineSeconds":{},"f:replicas":{},"f:revisionHistoryLimit":{},"f:selector":{},"f:strategy":{"f:rollingUpdate":{".":{},"f:maxSurge":{},"f:maxUnavailable":{}},"f:type":{}},"f:template":{"f:metadata":{"f:labels":{".":{},"f:app":{},"f:env":{},"f:team":{},"f:tier":{}}},"f:spec":{"f:containers":{"k:{\"name\":\"app\"}":{".":{},"f:args":{},"f:env":{".":{},%s},"f:image":{},"f:imagePullPolicy":{},"f:name":{},"f:ports":{".":{},"k:{\"containerPort\":8080,\"protocol\":\"TCP\"}":{".":{},"f:containerPort":{},"f:name":{},"f:protocol":{}}},"f:resources":{".":{},"f:limits":{".":{},"f:cpu":{},"f:memory":{}},"f:requests":{".":{},"f:cpu":{},"f:memory":{}}},"f:terminationMessagePath":{},"f:terminationMessagePolicy":{}}},"f:dnsPolicy":{},"f:restartPolicy":{},"f:schedulerName":{},"f:securityContext":{},"f:terminationGracePeriodSeconds":{}}}}}}]},`+
		`"spec":{"replicas":%d,"selector":{"matchLabels":{"app":"app-%d"}},"template":{"metadata":{"labels":{"app":"app-%d","env":"bench","team":"team-%d","tier":"backend"}},"spec":{"containers":[{"name":"app","image":"registry.example.com/team/app:1.4.%d","args":["--listen=:8080","--log-level=info"],"ports":[{"name":"http","containerPort":8080,"protocol":"TCP"}],"env":[%s],"resources":{"limits":{"cpu":"1","memory":"512Mi"},"requests":{"cpu":"100m","memory":"128Mi"}},"terminationMessagePath":"/dev/termination-log","terminationMessagePolicy":"File","imagePullPolicy":"IfNotPresent"}],"restartPolicy":"Always","terminationGracePeriodSeconds":30,"dnsPolicy":"ClusterFirst","securityContext":{},"schedulerName":"default-scheduler"}},"strategy":{"type":"RollingUpdate","rollingUpdate":{"maxUnavailable":"25%%","maxSurge":"25%%"}},"revisionHistoryLimit":10,"progressDeadlineSeconds":600},"status":{}}`,
		kind, i, i, 1000+i, i, i%20, strings.Join(fenv, ","), 1+i%3, i, i, i%20, i%10, strings.Join(env, ","))
}

func benchPage(n int) []byte {
	items := make([]string, n)
	for i := range items {
		items[i] = benchDeployment(i, false)
	}
	return []byte(`{"kind":"DeploymentList","apiVersion":"apps/v1","metadata":{"resourceVersion":"99999","continue":"next"},"items":[` + strings.Join(items, ",") + `]}`)
}

// BenchmarkDecodeListPage decodes a page of 500 Deployments as dynwatch's
// informers do, against what the dynamic client does (unstructured maps):
//
//	go test ./dyninformer -run '^$' -bench DecodeListPage -benchmem -count 6 | benchstat -col /impl -
func BenchmarkDecodeListPage(b *testing.B) {
	page := benchPage(500)
	b.Run("impl=dynwatch", func(b *testing.B) {
		b.SetBytes(int64(len(page)))
		b.ReportAllocs()
		for b.Loop() {
			var l List
			if err := parseList(page, &l); err != nil || len(l.Items) != 500 {
				b.Fatal(err, len(l.Items))
			}
		}
	})
	b.Run("impl=unstructured", func(b *testing.B) {
		b.SetBytes(int64(len(page)))
		b.ReportAllocs()
		for b.Loop() {
			var l unstructured.UnstructuredList
			if _, _, err := unstructured.UnstructuredJSONScheme.Decode(page, nil, &l); err != nil || len(l.Items) != 500 {
				b.Fatal(err, len(l.Items))
			}
			for i := range l.Items {
				l.Items[i].SetManagedFields(nil) // what dynwatch's transform did
			}
		}
	})
}

// benchStream is a watch stream of n events, one per line as the API server
// writes them.
func benchStream(n int) []byte {
	var s bytes.Buffer
	for i := range n {
		fmt.Fprintf(&s, `{"type":"MODIFIED","object":%s}`+"\n", benchDeployment(i, true))
	}
	return s.Bytes()
}

// BenchmarkDecodeWatchEvent reads watch events through client-go's streaming
// and watch decoders: with dynwatch's framer and codec, against client-go's
// JSON framer and the dynamic client's unstructured decoding.
//
//	go test ./dyninformer -run '^$' -bench DecodeWatchEvent -benchmem -count 6 | benchstat -col /impl -
func BenchmarkDecodeWatchEvent(b *testing.B) {
	const n = 200
	stream := benchStream(n)
	// One op reads the whole stream of n events.
	decode := func(b *testing.B, framer runtime.Framer, frames, objects runtime.Decoder) {
		b.SetBytes(int64(len(stream)))
		b.ReportAllocs()
		for b.Loop() {
			fr := framer.NewFrameReader(io.NopCloser(bytes.NewReader(stream)))
			dec := restclientwatch.NewDecoder(streaming.NewDecoder(fr, frames), objects)
			for range n {
				if _, _, err := dec.Decode(); err != nil {
					b.Fatal(err)
				}
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/event")
	}
	b.Run("impl=dynwatch", func(b *testing.B) {
		decode(b, jsonFramer{}, rawCodec{}, rawCodec{})
	})
	b.Run("impl=unstructured", func(b *testing.B) {
		// As the dynamic client reads watch frames: a JSON serializer of a
		// scheme that knows metav1.WatchEvent, and unstructured objects.
		scheme := runtime.NewScheme()
		metav1.AddToGroupVersion(scheme, schema.GroupVersion{Version: "v1"})
		frames := serializerjson.NewSerializerWithOptions(serializerjson.DefaultMetaFactory, scheme, scheme, serializerjson.SerializerOptions{})
		decode(b, serializerjson.Framer, frames, unstructured.UnstructuredJSONScheme)
	})
}
