package dyninformer

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http/httputil"
	"net/url"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/dynwatch/dynwatch/event"
	"github.com/dynwatch/dynwatch/internal/testenv"
)

// kubeconfigEnv hands a child test process the parent's API server, so that
// TestWatchListOnAndOff's children need not start their own.
const kubeconfigEnv = "DYNWATCH_TEST_KUBECONFIG"

// A token user whose RBAC TestEveryOutageIsReported grants and revokes.
const (
	outageUser  = "outage-reader"
	outageToken = "dynwatch-outage-token"
)

// The API server starts with the first test that needs it (cluster), so that
// fuzzing and the codec tests run without one.
var (
	startOnce  sync.Once
	env        *testenv.Env // nil in a child, which uses its parent's
	restConfig *rest.Config
	startErr   error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if env != nil {
		env.Stop()
	}
	os.Exit(code)
}

// cluster returns the config of the test API server, starting it if need be.
func cluster(t *testing.T) *rest.Config {
	t.Helper()
	startOnce.Do(func() {
		if path := os.Getenv(kubeconfigEnv); path != "" {
			restConfig, startErr = clientcmd.BuildConfigFromFlags("", path)
			return
		}
		env, startErr = testenv.Start(testenv.Options{Users: []testenv.User{{Name: outageUser, Token: outageToken}}})
		if startErr == nil {
			restConfig = env.Config
		}
	})
	if startErr != nil {
		t.Fatal(startErr)
	}
	return restConfig
}

var cmGVR = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}

// collector keeps the events a manager hands over.
type collector struct {
	mu  sync.Mutex
	evs []*event.Event
}

func (c *collector) handle(_ Key, ev *event.Event) {
	c.mu.Lock()
	c.evs = append(c.evs, ev)
	c.mu.Unlock()
}

func (c *collector) events() []*event.Event {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.evs)
}

func (c *collector) waitFor(t *testing.T, n int) []*event.Event {
	t.Helper()
	testenv.WaitFor(t, fmt.Sprintf("%d events", n), 20*time.Second, func() bool { return len(c.events()) >= n })
	return c.events()
}

// labelledConfigMap is a config map named name in ns, labelled app: x, that
// holds v: value.
func labelledConfigMap(ns, name, value string) *unstructured.Unstructured {
	cm := testenv.ConfigMap(ns, name, map[string]any{"v": value})
	cm["metadata"].(map[string]any)["labels"] = map[string]any{"app": "x"}
	return &unstructured.Unstructured{Object: cm}
}

// blockingHandler records events like a collector, but the call for the live
// add of the config map named block waits until release is closed.
type blockingHandler struct {
	collector
	entered, release chan struct{}
	once             sync.Once
	inFlight         atomic.Int32
	overlapped       atomic.Bool // two calls ran at once
}

func newBlockingHandler() *blockingHandler {
	return &blockingHandler{entered: make(chan struct{}), release: make(chan struct{})}
}

func (h *blockingHandler) handle(k Key, ev *event.Event) {
	if h.inFlight.Add(1) > 1 {
		h.overlapped.Store(true)
	}
	defer h.inFlight.Add(-1)
	if ev.Name == "block" && ev.Origin == event.Live {
		h.once.Do(func() { close(h.entered) })
		<-h.release
	}
	h.collector.handle(k, ev)
}

// blockedIn reports whether a goroutine waits for a mutex inside fn, called
// from caller.
func blockedIn(caller, fn string) bool {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	for _, g := range strings.Split(string(buf), "\n\n") {
		header, _, _ := strings.Cut(g, "\n")
		if strings.Contains(header, "sync.Mutex.Lock") && strings.Contains(g, fn) && strings.Contains(g, caller) {
			return true
		}
	}
	return false
}

// waitBlockedOrDone waits until done is closed (false) or a goroutine waits
// for a mutex inside fn, called from caller (true).
func waitBlockedOrDone(t *testing.T, done <-chan struct{}, caller, fn string) bool {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-done:
			return false
		default:
		}
		if blockedIn(caller, fn) {
			return true
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("neither done nor waiting in %s", fn)
	return false
}

func names(evs []*event.Event) []string {
	out := make([]string, len(evs))
	for i, ev := range evs {
		out[i] = ev.Name
	}
	return out
}

// decodeMap is what the bytes mean, for comparing documents whatever their key
// order and spacing.
func decodeMap(t testing.TB, b []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("not valid JSON: %v\n%s", err, b)
	}
	return m
}

// oneByte hands over its data a few bytes at a time, as a slow network does.
type oneByte struct {
	data []byte
	n    int
}

func (r *oneByte) Read(p []byte) (int, error) {
	if len(r.data) == 0 {
		return 0, io.EOF
	}
	n := min(r.n, len(p), len(r.data))
	copy(p, r.data[:n])
	r.data = r.data[n:]
	return n, nil
}

func (r *oneByte) Close() error { return nil }

// readFrame reads one frame as client-go's streaming decoder does: a fixed
// buffer, and more Reads while they say io.ErrShortBuffer.
func readFrame(r io.Reader, bufSize int) ([]byte, error) {
	frame, err := readMarkedFrame(r, bufSize)
	// The space the framer puts before a frame that is not a watch event as
	// the API server writes it (lastIsContainer).
	return bytes.TrimPrefix(frame, []byte(" ")), err
}

// readMarkedFrame reads one frame as the framer returns it.
func readMarkedFrame(r io.Reader, bufSize int) ([]byte, error) {
	var frame []byte
	buf := make([]byte, bufSize)
	for {
		n, err := r.Read(buf)
		frame = append(frame, buf[:n]...)
		if errors.Is(err, io.ErrShortBuffer) {
			continue
		}
		return frame, err
	}
}

func watchStream() ([]byte, []string) {
	frames := []string{
		`{"type":"ADDED","object":{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"a","namespace":"n","uid":"1","resourceVersion":"5","managedFields":[{"m":1}]},"data":{"k":"} { \" ] \\\\"}}}`,
		`{"type":"MODIFIED","object":{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"a","namespace":"n","uid":"1","resourceVersion":"6"},"data":{"k":"\\\""}}}`,
		`{"type":"BOOKMARK","object":{"kind":"ConfigMap","apiVersion":"v1","metadata":{"resourceVersion":"7","annotations":{"k8s.io/initial-events-end":"true"}}}}`,
		`{"type":"DELETED","object":{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"a","namespace":"n","uid":"1","resourceVersion":"8"}}}`,
		`{"type":"ERROR","object":{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"too old resource version","reason":"Expired","code":410}}`,
	}
	var b bytes.Buffer
	for i, f := range frames {
		b.WriteString(f)
		b.WriteString([]string{"\n", "", " \r\n\t", "\n\n"}[i%4])
	}
	return b.Bytes(), frames
}

// backslashFrame is a watch event whose ConfigMap holds n bytes of c in one
// value; for c = '\\' that is n/2 escaped backslashes, which anyone who may
// write one object in a watched scope can send to every watch of it.
func backslashFrame(n int, c byte) []byte {
	return []byte(`{"type":"ADDED","object":{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"a","namespace":"n","uid":"1","resourceVersion":"5"},"data":{"v":"` +
		strings.Repeat(string(c), n) + `"}}}` + "\n")
}

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

// apiProxy is a reverse proxy to cfg's API server, flushing as it copies
// (watch streams), for the tests' proxies that stand between an informer
// and the real API server.
func apiProxy(t *testing.T, cfg *rest.Config) *httputil.ReverseProxy {
	t.Helper()
	rt, err := rest.TransportFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	api, err := url.Parse(cfg.Host)
	if err != nil {
		t.Fatal(err)
	}
	return &httputil.ReverseProxy{Rewrite: func(r *httputil.ProxyRequest) { r.SetURL(api) }, Transport: rt, FlushInterval: -1}
}

// cmWatch is a watch of the config maps of ns.
func cmWatch(ns string) Watch {
	return Watch{Resource: event.Resource{Version: "v1", Resource: "configmaps", Kind: "ConfigMap", Namespaced: true}, Namespace: ns}
}
