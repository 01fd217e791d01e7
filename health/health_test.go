package health

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/dynwatch/dynwatch/config"
	"github.com/dynwatch/dynwatch/event"
)

var deployments = event.Resource{Group: "apps", Version: "v1", Resource: "deployments", Kind: "Deployment", Namespaced: true}

func TestGeneric(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name, group, kind, obj string
		want                   event.Health
	}{
		{"deleting", "example.com", "Widget", `{"metadata":{"deletionTimestamp":"2026-12-01T11:00:00Z"}}`,
			event.Health{Status: Terminating, Message: "Resource scheduled for deletion"}},
		{"generation not observed", "example.com", "Widget", `{"metadata":{"generation":3},"status":{"observedGeneration":2}}`,
			event.Health{Status: InProgress, Message: "Widget generation is 3, but latest observed generation is 2"}},
		{"reconciling", "example.com", "Widget", `{"metadata":{"generation":2},"status":{"observedGeneration":2,"conditions":[{"type":"Reconciling","status":"True","message":"building"}]}}`,
			event.Health{Status: InProgress, Message: "building"}},
		{"stalled", "example.com", "Widget", `{"status":{"conditions":[{"type":"Stalled","status":"True","message":"quota"}]}}`,
			event.Health{Status: Failed, Message: "quota"}},
		{"reconciling false", "example.com", "Widget", `{"status":{"conditions":[{"type":"Reconciling","status":"False"}]}}`,
			event.Health{Status: Current, Message: "Resource is current"}},
		{"ready true", "example.com", "Widget", `{"status":{"conditions":[{"type":"Ready","status":"True"}]}}`,
			event.Health{Status: Current, Message: "Resource is Ready"}},
		{"ready false", "example.com", "Widget", `{"status":{"conditions":[{"type":"Ready","status":"False","message":"waiting"}]}}`,
			event.Health{Status: InProgress, Message: "waiting"}},
		{"no status", "example.com", "Widget", `{"spec":{}}`, event.Health{Status: Current, Message: "Resource is current"}},
		{"status not an object", "example.com", "Widget", `{"status":"ok"}`, event.Health{Status: Unknown, Message: "status is not an object"}},
		{"generation a string", "example.com", "Widget", `{"metadata":{"generation":"3"}}`,
			event.Health{Status: Unknown, Message: `metadata.generation is "3", not an integer`}},
		{"deployment available", "apps", "Deployment", `{"spec":{"replicas":2,"progressDeadlineSeconds":600},"status":{"replicas":2,"updatedReplicas":2,"readyReplicas":2,"availableReplicas":2,
			"conditions":[{"type":"Progressing","status":"True","reason":"NewReplicaSetAvailable"},{"type":"Available","status":"True"}]}}`,
			event.Health{Status: Current, Message: "Deployment is available. Replicas: 2"}},
		{"deployment rolling", "apps", "Deployment", `{"spec":{"replicas":3},"status":{"replicas":3,"updatedReplicas":1}}`,
			event.Health{Status: InProgress, Message: "Updated: 1/3"}},
		{"deployment deadline", "apps", "Deployment", `{"spec":{"replicas":1},"status":{"conditions":[{"type":"Progressing","status":"False","reason":"ProgressDeadlineExceeded"}]}}`,
			event.Health{Status: Failed, Message: "Progress deadline exceeded"}},
		{"deployment replicas float", "apps", "Deployment", `{"spec":{"replicas":2.0}}`,
			event.Health{Status: InProgress, Message: "Replicas: 0/1"}},
		{"statefulset partition", "apps", "StatefulSet", `{"spec":{"replicas":4,"updateStrategy":{"rollingUpdate":{"partition":2}}},"status":{"replicas":4,"readyReplicas":4,"updatedReplicas":1}}`,
			event.Health{Status: InProgress, Message: "updated: 1/2"}},
		{"statefulset revision", "apps", "StatefulSet", `{"spec":{"replicas":1},"status":{"replicas":1,"readyReplicas":1,"currentReplicas":1,"currentRevision":"a","updateRevision":"b"}}`,
			event.Health{Status: InProgress, Message: "Waiting for updated revision to match current"}},
		{"daemonset unobserved", "apps", "DaemonSet", `{"metadata":{"generation":1},"status":{}}`,
			event.Health{Status: InProgress, Message: "DaemonSet status.observedGeneration not found"}},
		{"pod crashloop", "", "Pod", `{"status":{"phase":"Running","containerStatuses":[{"name":"a","state":{"waiting":{"reason":"CrashLoopBackOff"}}},{"name":"b","state":{"running":{}}}]}}`,
			event.Health{Status: Failed, Message: "Containers in CrashLoop state: a"}},
		{"pod unschedulable", "", "Pod", `{"metadata":{"creationTimestamp":"2026-12-01T11:00:00Z"},"status":{"phase":"Pending","conditions":[{"type":"PodScheduled","status":"False","reason":"Unschedulable"}]}}`,
			event.Health{Status: Failed, Message: "Pod could not be scheduled"}},
		{"pod just created unschedulable", "", "Pod", `{"metadata":{"creationTimestamp":"2026-12-01T11:59:55Z"},"status":{"phase":"Pending","conditions":[{"type":"PodScheduled","status":"False","reason":"Unschedulable"}]}}`,
			event.Health{Status: InProgress, Message: "Pod has not been scheduled"}},
		{"pod odd phase", "", "Pod", `{"status":{"phase":"Lost"}}`, event.Health{Status: Unknown, Message: "unknown phase Lost"}},
		{"pvc pending", "", "PersistentVolumeClaim", `{"status":{"phase":"Pending"}}`, event.Health{Status: InProgress, Message: "PVC is not Bound. phase: Pending"}},
		{"service lb", "", "Service", `{"spec":{"type":"LoadBalancer"}}`, event.Health{Status: InProgress, Message: "ClusterIP not set. Service type: LoadBalancer"}},
		{"job failed", "batch", "Job", `{"spec":{"completions":3},"status":{"failed":2,"conditions":[{"type":"Failed","status":"True"}]}}`,
			event.Health{Status: Failed, Message: "Job Failed. failed: 2/3"}},
		{"job running", "batch", "Job", `{"status":{"startTime":"2026-12-01T11:00:00Z","active":1}}`,
			event.Health{Status: Current, Message: "Job in progress. success:0, active: 1, failed: 0"}},
		{"crd names", "apiextensions.k8s.io", "CustomResourceDefinition", `{"status":{"conditions":[{"type":"NamesAccepted","status":"False","message":"taken"}]}}`,
			event.Health{Status: Failed, Message: "taken"}},
		{"crd installing", "apiextensions.k8s.io", "CustomResourceDefinition", `{"status":{"conditions":[{"type":"Established","status":"False","reason":"Installing"}]}}`,
			event.Health{Status: InProgress, Message: "Install in progress"}},
		{"replicaset failure", "apps", "ReplicaSet", `{"status":{"conditions":[{"type":"ReplicaFailure","status":"True"}]}}`,
			event.Health{Status: InProgress, Message: "Replica Failure condition. Check Pods"}},
		{"configmap", "", "ConfigMap", `{"status":{"conditions":[{"type":"Ready","status":"False"}]}}`,
			event.Health{Status: Current, Message: "Resource is always ready"}},
		{"pdb", "policy", "PodDisruptionBudget", `{}`, event.Health{Status: Current, Message: "AllowedDisruptions has been computed."}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Generic(tt.group, tt.kind, []byte(tt.obj), now); got != tt.want {
				t.Errorf("Generic = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestCheckerKindOf(t *testing.T) {
	c, ps := New(nil)
	if len(ps) > 0 {
		t.Fatal(ps)
	}
	// Without the resource's kind, the object's apiVersion and kind name it.
	obj := `{"apiVersion":"apps/v1","kind":"Deployment","spec":{"replicas":3},"status":{"replicas":1}}`
	if got := c.Health(event.Resource{}, []byte(obj)); got.Message != "Replicas: 1/3" {
		t.Errorf("Health = %+v, want the Deployment rule's Replicas: 1/3", got)
	}
}

func TestCheckerCEL(t *testing.T) {
	specs := []config.HealthSpec{
		{Group: "apps", Kind: "Deployment", CEL: `object.spec.replicas == 0 ? "Failed" : "Current"`},
		{Group: "example.com", Kind: "Widget", CEL: `{"status": object.status.phase == "Up" ? "Current" : "InProgress", "message": "phase " + object.status.phase}`},
		{Group: "example.com", Kind: "Gadget", CEL: `object.status.phase`},
	}
	c, ps := New(specs)
	if len(ps) > 0 {
		t.Fatal(ps)
	}
	tests := []struct {
		name string
		res  event.Resource
		obj  string
		want event.Health
	}{
		{"string", deployments, `{"spec":{"replicas":0}}`, event.Health{Status: Failed}},
		{"takes precedence", deployments, `{"spec":{"replicas":2},"status":{"replicas":0}}`, event.Health{Status: Current}},
		{"map", event.Resource{Group: "example.com", Kind: "Widget"}, `{"status":{"phase":"Down"}}`, event.Health{Status: InProgress, Message: "phase Down"}},
		{"not a status", event.Resource{Group: "example.com", Kind: "Gadget"}, `{"status":{"phase":"Up"}}`,
			event.Health{Status: Unknown, Message: `health CEL: yielded status "Up", not one of Current, InProgress, Failed, Terminating, Unknown`}},
		{"error", event.Resource{Group: "example.com", Kind: "Gadget"}, `{}`, event.Health{Status: Unknown, Message: "health CEL: no such key: status"}},
		{"other group", event.Resource{Group: "other.com", Kind: "Widget"}, `{}`, event.Health{Status: Current, Message: "Resource is current"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := c.Health(tt.res, []byte(tt.obj)); got != tt.want {
				t.Errorf("Health = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestNewProblems(t *testing.T) {
	_, ps := New([]config.HealthSpec{
		{Kind: "A", CEL: `object.status.phase ==`},
		{Kind: "B", CEL: `1 + 2`},
		{Kind: "C", CEL: `oldObject.x`},
		{Kind: "D", CEL: ``},
		{Kind: "E", CEL: `"Current"`},
	})
	want := []string{"health[0].cel: CEL: ", "health[1].cel: CEL: the expression must yield a status", "health[2].cel: CEL: ERROR: <input>:1:1: undeclared reference to 'oldObject'", "health[3].cel: required"}
	if len(ps) != len(want) {
		t.Fatalf("problems = %v, want %d", ps, len(want))
	}
	for i, p := range ps {
		if !strings.HasPrefix(p.Error(), want[i]) {
			t.Errorf("problem %d = %q, want it to start with %q", i, p.Error(), want[i])
		}
	}
}

func TestPaths(t *testing.T) {
	c, _ := New([]config.HealthSpec{{Kind: "A", CEL: `object.data.mode == "on" ? "Current" : "Failed"`}})
	got := strings.Join(Paths(c), ",")
	if want := "apiVersion,data.mode,kind,metadata.creationTimestamp,metadata.deletionTimestamp,metadata.generation," +
		"spec.clusterIP,spec.completions,spec.parallelism,spec.progressDeadlineSeconds,spec.replicas,spec.type," +
		"spec.updateStrategy.rollingUpdate.partition,spec.updateStrategy.type,status"; got != want {
		t.Errorf("Paths = %s, want %s", got, want)
	}
}

// An object rebuilt from its values at Paths (as a restart record rebuilds
// an old object) has the health the object has: each spec field a built-in
// kind reads is among them.
func TestPathsRebuildHealth(t *testing.T) {
	now := time.Now()
	objs := []string{
		`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"generation":1},"spec":{"replicas":3,"progressDeadlineSeconds":60,"template":{}},"status":{"observedGeneration":1,"replicas":3,"updatedReplicas":3,"readyReplicas":3,"availableReplicas":3,"conditions":[{"type":"Available","status":"True"},{"type":"Progressing","status":"True","reason":"NewReplicaSetAvailable"}]}}`,
		`{"apiVersion":"apps/v1","kind":"ReplicaSet","spec":{"replicas":2},"status":{"replicas":2,"readyReplicas":2,"availableReplicas":2,"fullyLabeledReplicas":2}}`,
		`{"apiVersion":"apps/v1","kind":"StatefulSet","spec":{"replicas":3,"updateStrategy":{"type":"RollingUpdate","rollingUpdate":{"partition":2}}},"status":{"replicas":3,"readyReplicas":3,"updatedReplicas":1}}`,
		`{"apiVersion":"apps/v1","kind":"StatefulSet","spec":{"replicas":3,"updateStrategy":{"type":"OnDelete"}},"status":{"replicas":0}}`,
		`{"apiVersion":"v1","kind":"Service","spec":{"type":"LoadBalancer","clusterIP":"10.0.0.1"}}`,
		`{"apiVersion":"batch/v1","kind":"Job","spec":{"parallelism":2,"completions":4},"status":{"succeeded":4,"conditions":[{"type":"Complete","status":"True"}]}}`,
		`{"apiVersion":"v1","kind":"Pod","metadata":{"creationTimestamp":"` + now.UTC().Format(time.RFC3339) + `"},"status":{"phase":"Pending","conditions":[{"type":"PodScheduled","status":"False","reason":"Unschedulable"}]}}`,
	}
	for _, o := range objs {
		rebuilt := rebuild([]byte(o), Paths(nil))
		kind := gjson.Get(o, "kind").Str
		group, _, _ := strings.Cut(gjson.Get(o, "apiVersion").Str, "/")
		if group == "v1" {
			group = ""
		}
		want, got := Generic(group, kind, []byte(o), now), Generic(group, kind, rebuilt, now)
		if got != want {
			t.Errorf("%s rebuilt from Paths: %+v, want %+v (rebuilt %s)", kind, got, want, rebuilt)
		}
	}
}

func TestParseStatuses(t *testing.T) {
	tests := []struct{ in, want, err string }{
		{"Failed,InProgress", "Failed,InProgress", ""},
		{" failed , terminating", "Failed,Terminating", ""},
		{"Faild", "", `unknown health status "Faild", did you mean "Failed"? (want any of Current, InProgress, Failed, Terminating, Unknown)`},
		{"Broken", "", `unknown health status "Broken" (want any of Current, InProgress, Failed, Terminating, Unknown)`},
		{",", "", "want a status: any of Current, InProgress, Failed, Terminating, Unknown, comma-separated"},
	}
	for _, tt := range tests {
		got, err := ParseStatuses(tt.in)
		if tt.err != "" {
			if err == nil || err.Error() != tt.err {
				t.Errorf("ParseStatuses(%q) error %v, want %s", tt.in, err, tt.err)
			}
			continue
		}
		if err != nil || strings.Join(got, ",") != tt.want {
			t.Errorf("ParseStatuses(%q) = %v, %v, want %s", tt.in, got, err, tt.want)
		}
	}
}

// rebuild is the object holding obj's values at paths alone, as a restart
// record rebuilds an old object (state.Doc).
func rebuild(obj []byte, paths []string) []byte {
	root := map[string]any{}
	for _, p := range paths {
		v := gjson.GetBytes(obj, p)
		if p == "" || !v.Exists() {
			continue
		}
		keys := strings.Split(p, ".")
		m := root
		for _, k := range keys[:len(keys)-1] {
			if _, ok := m[k].(map[string]any); !ok {
				m[k] = map[string]any{}
			}
			m = m[k].(map[string]any)
		}
		m[keys[len(keys)-1]] = json.RawMessage(v.Raw)
	}
	b, _ := json.Marshal(root)
	return b
}

// A kind's CEL that indexes object with constant keys (object["data"]["mode"],
// as CEL needs for a key that is no identifier) reads the path those keys
// name: an old object rebuilt from Paths has the health the object had,
// not "no such key".
func TestPathsFollowConstantIndex(t *testing.T) {
	c, ps := New([]config.HealthSpec{{Group: "example.com", Kind: "Widget", CEL: `object["data"]["mode"] == "on" && object["data"]["x-y"] == "z" ? "Current" : "Failed"`}})
	if len(ps) > 0 {
		t.Fatal(ps)
	}
	res := event.Resource{Group: "example.com", Version: "v1", Resource: "widgets", Kind: "Widget"}
	obj := []byte(`{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w"},"data":{"mode":"on","x-y":"z","big":"…"}}`)
	want, got := c.Health(res, obj), c.Health(res, rebuild(obj, Paths(c)))
	if want.Status != Current || got != want {
		t.Errorf("rebuilt from Paths %v: %+v, want %+v (Current)", Paths(c), got, want)
	}
}
