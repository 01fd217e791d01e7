package kstatuscheck

import (
	"encoding/json"
	"math/rand"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"

	"github.com/dynwatch/dynwatch/event"
	"github.com/dynwatch/dynwatch/health"
)

// TestRandomObjectsAgreeWithKstatus compares the two on objects of every
// kind kstatus has rules for, made of the fields those rules read with
// values of every JSON type (a count as a float, a string or an integer
// past int64's range, a condition null or of a numeric type): the fixtures
// name the cases someone thought of, this finds the others. The seed is
// fixed, so that a failure names an object that fails again.
func TestRandomObjectsAgreeWithKstatus(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	kinds := [][2]string{{"v1", "Pod"}, {"v1", "Service"}, {"v1", "PersistentVolumeClaim"}, {"v1", "Secret"}, {"v1", "ConfigMap"}, {"apps/v1", "Deployment"}, {"apps/v1", "StatefulSet"}, {"apps/v1", "DaemonSet"}, {"apps/v1", "ReplicaSet"}, {"batch/v1", "Job"}, {"batch/v1", "CronJob"}, {"policy/v1", "PodDisruptionBudget"}, {"apiextensions.k8s.io/v1", "CustomResourceDefinition"}, {"example.com/v1", "Widget"}, {"extensions/v1beta1", "Deployment"}}
	nums := []any{nil, 0, 1, 2, 3, -1, 1.0, 2.5, "2", true, json.RawMessage("1e0"), json.RawMessage("9223372036854775808"), json.RawMessage("-0")}
	strs := []any{nil, "", "True", "False", "Unknown", "true", "Ready", 1, "Running", "Pending", "Succeeded", "Failed", "Bound", "OnDelete", "RollingUpdate", "LoadBalancer", "Unschedulable", "CrashLoopBackOff", "NewReplicaSetAvailable", "ProgressDeadlineExceeded", "Installing", "x"}
	ctypes := []any{"Ready", "Reconciling", "Stalled", "Available", "Progressing", "Complete", "Failed", "NamesAccepted", "Established", "PodScheduled", "ReplicaFailure", "ready", nil, 3}
	pick := func(xs []any) any { return xs[r.Intn(len(xs))] }
	maybe := func(m map[string]any, k string, v any) {
		if r.Intn(3) > 0 {
			m[k] = v
		}
	}
	bad, n := 0, 0
	for i := 0; i < 20000 && bad < 10; i++ {
		k := kinds[r.Intn(len(kinds))]
		md := map[string]any{"name": "o"}
		maybe(md, "generation", pick(nums))
		if r.Intn(8) == 0 {
			md["deletionTimestamp"] = pick(strs)
		}
		if r.Intn(3) == 0 {
			md["creationTimestamp"] = "2020-01-01T00:00:00Z"
		}
		spec := map[string]any{}
		for _, f := range []string{"replicas", "progressDeadlineSeconds", "parallelism", "completions"} {
			if r.Intn(2) == 0 {
				spec[f] = pick(nums)
			}
		}
		maybe(spec, "type", pick(strs))
		maybe(spec, "clusterIP", pick(strs))
		us := map[string]any{}
		maybe(us, "type", pick(strs))
		maybe(us, "rollingUpdate", map[string]any{"partition": pick(nums)})
		maybe(spec, "updateStrategy", us)
		st := map[string]any{}
		for _, f := range []string{"observedGeneration", "replicas", "updatedReplicas", "readyReplicas", "availableReplicas", "fullyLabeledReplicas", "currentReplicas", "desiredNumberScheduled", "currentNumberScheduled", "updatedNumberScheduled", "numberAvailable", "numberReady", "succeeded", "active", "failed"} {
			if r.Intn(2) == 0 {
				st[f] = pick(nums)
			}
		}
		maybe(st, "phase", pick(strs))
		maybe(st, "startTime", pick(strs))
		maybe(st, "currentRevision", pick(strs))
		maybe(st, "updateRevision", pick(strs))
		var cs []any
		for j := r.Intn(4); j > 0; j-- {
			c := map[string]any{}
			maybe(c, "type", pick(ctypes))
			maybe(c, "status", pick(strs))
			maybe(c, "reason", pick(strs))
			maybe(c, "message", pick(strs))
			if r.Intn(20) == 0 {
				cs = append(cs, nil)
			} else {
				cs = append(cs, c)
			}
		}
		if cs != nil {
			st["conditions"] = cs
		}
		if r.Intn(3) > 0 {
			var ctrs []any
			for j := r.Intn(3); j > 0; j-- {
				ctrs = append(ctrs, map[string]any{"name": "c", "state": map[string]any{"waiting": map[string]any{"reason": pick(strs)}}})
			}
			if ctrs != nil {
				st["containerStatuses"] = ctrs
			}
		}
		obj := map[string]any{"apiVersion": k[0], "kind": k[1], "metadata": md, "spec": spec}
		if r.Intn(10) > 0 {
			obj["status"] = st
		}
		b, _ := json.Marshal(obj)
		n++
		func() {
			defer func() {
				// kstatus panics on some shapes (a container status that
				// is no object): nothing to compare then.
				_ = recover()
			}()
			ks, dw := compareQuiet(b)
			if ks.Status != dw.Status {
				bad++
				t.Errorf("%s\n kstatus %+v\n dynwatch %+v", b, ks, dw)
			}
		}()
	}
	if n < 20000 {
		t.Errorf("compared %d objects", n)
	}
}

// compareQuiet is compare without a test to report to: kstatus' status
// (Unknown on its error) and dynwatch's, the kind read from the object as
// kstatus reads it; SKIP when the object is not one.
func compareQuiet(obj []byte) (kstatus, dynwatch event.Health) {
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(obj); err != nil {
		return event.Health{Status: "SKIP"}, event.Health{Status: "SKIP"}
	}
	res, err := status.Compute(u)
	if err != nil {
		kstatus = event.Health{Status: health.Unknown, Message: err.Error()}
	} else {
		kstatus = event.Health{Status: res.Status.String(), Message: res.Message}
	}
	g, k := u.GroupVersionKind().Group, u.GetKind()
	dynwatch = health.Generic(g, k, obj, time.Now())
	return
}
