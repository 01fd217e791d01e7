package main

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/tidwall/gjson"

	"github.com/dynwatch/dynwatch/internal/testenv"
)

// latencyResult is one process's view of the update phase.
type latencyResult struct {
	label    string
	lat      []time.Duration
	cpu      time.Duration // spent during the update phase
	received int
}

// latencies runs a raw watch, dynwatch, and dynwatch with state (restarted on
// the state of the sync runs) side by side, makes o.updates updates, and
// collects when each process saw each one and what CPU it spent meanwhile.
func latencies(ctx context.Context, o options, env *testenv.Env, d dynamic.Interface, v variant, ns, statePath string) ([]latencyResult, error) {
	runs := []syncRun{{"raw watch", "rawwatch", ""}, {"dynwatch", "dynwatch", ""}, {"dynwatch, state", "dynwatch", statePath}}
	procs := make([]*proc, len(runs))
	for i, s := range runs {
		prof := ""
		if o.profile != "" {
			prof = o.profile + "/latency"
			if err := os.MkdirAll(prof, 0o755); err != nil {
				return nil, err
			}
		}
		p, err := start(s.mode, env.Kubeconfig, v, ns, s.state, prof)
		if err != nil {
			return nil, err
		}
		defer func() { _ = p.stop() }()
		if err := p.waitSynced(5 * time.Minute); err != nil {
			return nil, fmt.Errorf("%s: %w", s.label, err)
		}
		procs[i] = p
	}
	cpu0, err := cpus(procs)
	if err != nil {
		return nil, err
	}
	if err := update(ctx, d, v, ns, o); err != nil {
		return nil, err
	}
	deadline := time.Now().Add(30 * time.Second)
	for _, p := range procs {
		for len(p.latencies()) < o.updates && time.Now().Before(deadline) {
			time.Sleep(50 * time.Millisecond)
		}
	}
	cpu1, err := cpus(procs)
	if err != nil {
		return nil, err
	}
	out := make([]latencyResult, len(runs))
	for i, p := range procs {
		lat := p.latencies()
		out[i] = latencyResult{label: runs[i].label, lat: lat, cpu: cpu1[i] - cpu0[i], received: len(lat)}
	}
	return out, nil
}

func cpus(procs []*proc) ([]time.Duration, error) {
	out := make([]time.Duration, len(procs))
	for i, p := range procs {
		c, err := p.cpuNow()
		if err != nil {
			return nil, err
		}
		out[i] = c
	}
	return out, nil
}

// update writes o.updates updates, each stamped with when it was written.
func update(ctx context.Context, d dynamic.Interface, v variant, ns string, o options) error {
	ri := d.Resource(v.gvr).Namespace(ns)
	for i := range o.updates {
		name := v.make(ns, i%o.n)["metadata"].(map[string]any)["name"].(string)
		patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, latencyAnnotation, strconv.FormatInt(time.Now().UnixNano(), 10))
		if _, err := ri.Patch(ctx, name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
			return err
		}
		time.Sleep(o.interval)
	}
	return nil
}

// listBytes returns the size of the objects' JSON as the API server serves
// them, and how much of it is managedFields.
func listBytes(ctx context.Context, cfg *rest.Config, v variant, ns string) (total, managed int64, err error) {
	client, err := rest.RESTClientFor(restConfigFor(cfg))
	if err != nil {
		return 0, 0, err
	}
	cont := ""
	for {
		req := client.Get().AbsPath(apiPath(v, ns)...).Param("limit", "500")
		if cont != "" {
			req = req.Param("continue", cont)
		}
		body, err := req.DoRaw(ctx)
		if err != nil {
			return 0, 0, err
		}
		gjson.GetBytes(body, "items").ForEach(func(_, item gjson.Result) bool {
			total += int64(len(item.Raw))
			managed += int64(len(item.Get("metadata.managedFields").Raw))
			return true
		})
		if cont = gjson.GetBytes(body, "metadata.continue").Str; cont == "" {
			return total, managed, nil
		}
	}
}
