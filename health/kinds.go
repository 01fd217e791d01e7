package health

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/dynwatch/dynwatch/event"
)

// kindRule is the health rule of a built-in kind whose status kstatus reads
// field by field, because its controller sets no standard condition.
type kindRule func(o object, kind string, now time.Time) event.Health

// builtin returns the rule of a built-in kind, by group and kind as kstatus
// lists them (extensions/ for the kinds that group once served), or nil.
func builtin(group, kind string) kindRule {
	switch group + "/" + kind {
	case "/Service":
		return service
	case "/Pod":
		return pod
	case "/PersistentVolumeClaim":
		return pvc
	case "/Secret", "/ConfigMap", "batch/CronJob":
		return alwaysReady
	case "apps/StatefulSet":
		return statefulSet
	case "apps/DaemonSet", "extensions/DaemonSet":
		return daemonSet
	case "apps/Deployment", "extensions/Deployment":
		return deployment
	case "apps/ReplicaSet", "extensions/ReplicaSet":
		return replicaSet
	case "policy/PodDisruptionBudget":
		return pdb
	case "batch/Job":
		return job
	case "apiextensions.k8s.io/CustomResourceDefinition":
		return crd
	}
	return nil
}

func alwaysReady(object, string, time.Time) event.Health {
	return h(Current, "Resource is always ready")
}

// pdb: past the generic check of observedGeneration, the disruption
// controller has computed the allowed disruptions; it sets no condition when
// that fails.
func pdb(object, string, time.Time) event.Health {
	return h(Current, "AllowedDisruptions has been computed.")
}

// counts reads the replica counts a workload's rule compares, with the
// defaults kstatus gives a missing one.
func counts(o object, defaults map[string]int64) map[string]int64 {
	out := make(map[string]int64, len(defaults))
	for p, d := range defaults {
		out[p] = o.integer(p, d)
	}
	return out
}

// deployment follows the deployment controller: replicas created, updated,
// none extra, available and ready, then its Progressing and Available
// conditions; a progress deadline exceeded is Failed.
func deployment(o object, _ string, _ time.Time) event.Health {
	// Without progressDeadlineSeconds the controller never sets
	// Progressing; it leaves the field at MaxInt32 to mean no deadline.
	progressing := o.integer("spec.progressDeadlineSeconds", math.MaxInt32) == math.MaxInt32
	available := false
	cs, err := o.conditions()
	if err != nil {
		return unknown(err)
	}
	for _, c := range cs {
		switch c.Type {
		case "Progressing":
			if c.Reason == "ProgressDeadlineExceeded" {
				return h(Failed, "Progress deadline exceeded")
			}
			progressing = progressing || (c.Status == "True" && c.Reason == "NewReplicaSetAvailable")
		case "Available":
			available = available || c.Status == "True"
		}
	}
	n := counts(o, map[string]int64{"spec.replicas": 1, "status.replicas": 0, "status.updatedReplicas": 0,
		"status.readyReplicas": 0, "status.availableReplicas": 0})
	spec, have, updated := n["spec.replicas"], n["status.replicas"], n["status.updatedReplicas"]
	switch {
	case spec > have:
		return h(InProgress, "Replicas: %d/%d", have, spec)
	case spec > updated:
		return h(InProgress, "Updated: %d/%d", updated, spec)
	case have > spec:
		return h(InProgress, "Pending termination: %d", have-spec)
	case updated > n["status.availableReplicas"]:
		return h(InProgress, "Available: %d/%d", n["status.availableReplicas"], updated)
	case spec > n["status.readyReplicas"]:
		return h(InProgress, "Ready: %d/%d", n["status.readyReplicas"], spec)
	case !progressing:
		return h(InProgress, "ReplicaSet not Available")
	case !available:
		return h(InProgress, "Deployment not Available")
	}
	return h(Current, "Deployment is available. Replicas: %d", have)
}

// replicaSet: a ReplicaFailure condition, then its replica counts.
func replicaSet(o object, _ string, _ time.Time) event.Health {
	cs, err := o.conditions()
	if err != nil {
		return unknown(err)
	}
	if _, ok := find(cs, "ReplicaFailure", "True"); ok {
		return h(InProgress, "Replica Failure condition. Check Pods")
	}
	n := counts(o, map[string]int64{"spec.replicas": 1, "status.replicas": 0, "status.readyReplicas": 0,
		"status.availableReplicas": 0, "status.fullyLabeledReplicas": 0})
	spec, have := n["spec.replicas"], n["status.replicas"]
	switch {
	case spec > n["status.fullyLabeledReplicas"]:
		return h(InProgress, "Labelled: %d/%d", n["status.fullyLabeledReplicas"], spec)
	case spec > n["status.availableReplicas"]:
		return h(InProgress, "Available: %d/%d", n["status.availableReplicas"], spec)
	case spec > n["status.readyReplicas"]:
		return h(InProgress, "Ready: %d/%d", n["status.readyReplicas"], spec)
	case have > spec:
		return h(InProgress, "Pending termination: %d", have-spec)
	}
	return h(Current, "ReplicaSet is available. Replicas: %d", have)
}

// statefulSet: OnDelete is managed by its user; else replicas, readiness,
// extras, a partitioned rollout, current replicas and the revisions.
func statefulSet(o object, _ string, _ time.Time) event.Health {
	if o.str("spec.updateStrategy.type", "") == "OnDelete" {
		return h(Current, "StatefulSet is using the ondelete update strategy")
	}
	n := counts(o, map[string]int64{"spec.replicas": 1, "status.readyReplicas": 0, "status.currentReplicas": 0,
		"status.updatedReplicas": 0, "status.replicas": 0, "spec.updateStrategy.rollingUpdate.partition": -1})
	spec, have, updated := n["spec.replicas"], n["status.replicas"], n["status.updatedReplicas"]
	partition := n["spec.updateStrategy.rollingUpdate.partition"]
	switch {
	case spec > have:
		return h(InProgress, "Replicas: %d/%d", have, spec)
	case spec > n["status.readyReplicas"]:
		return h(InProgress, "Ready: %d/%d", n["status.readyReplicas"], spec)
	case have > spec:
		return h(InProgress, "Pending termination: %d", have-spec)
	case partition != -1 && updated < spec-partition:
		return h(InProgress, "updated: %d/%d", updated, spec-partition)
	case partition != -1:
		return h(Current, "Partition rollout complete. updated: %d", updated)
	case spec > n["status.currentReplicas"]:
		return h(InProgress, "current: %d/%d", n["status.currentReplicas"], spec)
	case o.str("status.currentRevision", "") != o.str("status.updateRevision", ""):
		return h(InProgress, "Waiting for updated revision to match current")
	}
	return h(Current, "All replicas scheduled as expected. Replicas: %d", have)
}

// daemonSet: the controller always sets generation and observedGeneration
// once it has acted, so their absence is InProgress here (the generic check
// is lenient); then the scheduled, updated, available and ready counts.
func daemonSet(o object, kind string, _ time.Time) event.Health {
	for _, p := range []string{"metadata.generation", "status.observedGeneration"} {
		_, ok, err := int64At(o, p)
		if err != nil {
			return unknown(err)
		}
		if !ok {
			return h(InProgress, "%s %s not found", kind, p)
		}
	}
	n := counts(o, map[string]int64{"status.desiredNumberScheduled": -1, "status.currentNumberScheduled": 0,
		"status.updatedNumberScheduled": 0, "status.numberAvailable": 0, "status.numberReady": 0})
	want := n["status.desiredNumberScheduled"]
	switch {
	case want == -1:
		return h(InProgress, "Missing .status.desiredNumberScheduled")
	case want > n["status.currentNumberScheduled"]:
		return h(InProgress, "Current: %d/%d", n["status.currentNumberScheduled"], want)
	case want > n["status.updatedNumberScheduled"]:
		return h(InProgress, "Updated: %d/%d", n["status.updatedNumberScheduled"], want)
	case want > n["status.numberAvailable"]:
		return h(InProgress, "Available: %d/%d", n["status.numberAvailable"], want)
	case want > n["status.numberReady"]:
		return h(InProgress, "Ready: %d/%d", n["status.numberReady"], want)
	}
	return h(Current, "All replicas scheduled as expected. Replicas: %d", want)
}

func pvc(o object, _ string, _ time.Time) event.Health {
	if phase := o.str("status.phase", "unknown"); phase != "Bound" {
		return h(InProgress, "PVC is not Bound. phase: %s", phase)
	}
	return h(Current, "PVC is Bound")
}

// service: a LoadBalancer waits for its cluster IP; every other type is
// ready once created.
func service(o object, _ string, _ time.Time) event.Health {
	if o.str("spec.type", "ClusterIP") == "LoadBalancer" && o.str("spec.clusterIP", "") == "" {
		return h(InProgress, "ClusterIP not set. Service type: LoadBalancer")
	}
	return h(Current, "Service is ready")
}

// scheduleWindow is how long a Pod may stay unschedulable before kstatus
// calls it Failed.
const scheduleWindow = 15 * time.Second

// pod: a finished Pod is Current whatever its outcome (it did what it was
// made for); a running one is Current when Ready, Failed when a container
// crash-loops; a pending one is Failed when it cannot be scheduled past the
// window.
func pod(o object, _ string, now time.Time) event.Health {
	cs, err := o.conditions()
	if err != nil {
		return unknown(err)
	}
	switch phase := o.str("status.phase", ""); phase {
	case "Succeeded":
		return h(Current, "Pod has completed successfully")
	case "Failed":
		return h(Current, "Pod has completed, but not successfully")
	case "Running":
		if _, ok := find(cs, "Ready", "True"); ok {
			return h(Current, "Pod is Ready")
		}
		if names := crashLooping(o); len(names) > 0 {
			return h(Failed, "Containers in CrashLoop state: %s", strings.Join(names, ","))
		}
		return h(InProgress, "Pod is running but is not Ready")
	case "Pending":
		c, ok := find(cs, "PodScheduled", "False")
		if !ok || c.Reason != "Unschedulable" {
			return h(InProgress, "Pod is in the Pending phase")
		}
		created, _ := time.Parse(time.RFC3339, o.str("metadata.creationTimestamp", ""))
		if now.Add(-scheduleWindow).Before(created) {
			return h(InProgress, "Pod has not been scheduled")
		}
		return h(Failed, "Pod could not be scheduled")
	case "":
		return h(InProgress, "Pod phase not available")
	default:
		return unknown(fmt.Errorf("unknown phase %s", phase))
	}
}

// crashLooping names the containers waiting in CrashLoopBackOff.
func crashLooping(o object) []string {
	var names []string
	for _, cs := range o.get("status.containerStatuses").Array() {
		if cs.Get("state.waiting.reason").Str == "CrashLoopBackOff" && cs.Get("name").Exists() {
			names = append(names, cs.Get("name").String())
		}
	}
	return names
}

// job: Complete is Current, Failed is Failed; a started Job is Current while
// it runs (it is doing what it was made for), one not started InProgress.
func job(o object, _ string, _ time.Time) event.Health {
	parallelism := o.integer("spec.parallelism", 1)
	n := counts(o, map[string]int64{"spec.completions": parallelism, "status.succeeded": 0, "status.active": 0, "status.failed": 0})
	cs, err := o.conditions()
	if err != nil {
		return unknown(err)
	}
	for _, c := range cs {
		switch {
		case c.Type == "Complete" && c.Status == "True":
			return h(Current, "Job Completed. succeeded: %d/%d", n["status.succeeded"], n["spec.completions"])
		case c.Type == "Failed" && c.Status == "True":
			return h(Failed, "Job Failed. failed: %d/%d", n["status.failed"], n["spec.completions"])
		}
	}
	if o.str("status.startTime", "") == "" {
		return h(InProgress, "Job not started")
	}
	return h(Current, "Job in progress. success:%d, active: %d, failed: %d", n["status.succeeded"], n["status.active"], n["status.failed"])
}

// crd: names not accepted, or not established for a reason other than
// installing, is Failed; established is Current.
func crd(o object, _ string, _ time.Time) event.Health {
	cs, err := o.conditions()
	if err != nil {
		return unknown(err)
	}
	for _, c := range cs {
		switch {
		case c.Type == "NamesAccepted" && c.Status == "False":
			return event.Health{Status: Failed, Message: c.Message}
		case c.Type == "Established" && c.Status == "False" && c.Reason != "Installing":
			return event.Health{Status: Failed, Message: c.Message}
		case c.Type == "Established" && c.Status == "True":
			return h(Current, "CRD is established")
		}
	}
	return h(InProgress, "Install in progress")
}
