package main

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"sync"
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
	received int           // of the spaced updates
	burst    int           // updates of the burst received
	cpu      time.Duration // spent during the burst
	// spacedCPU is the CPU spent from the first spaced update until all of
	// them were seen: at that pace each event has a commit of its own.
	spacedCPU time.Duration
}

// waitReceived waits until every process has seen n updates, or 60s passed.
func waitReceived(procs []*proc, n int) {
	deadline := time.Now().Add(60 * time.Second)
	for _, p := range procs {
		for len(p.latencies()) < n && time.Now().Before(deadline) {
			time.Sleep(50 * time.Millisecond)
		}
	}
}

// settle is how long the processes of the latency phase idle after their
// sync before the spaced updates begin.
const settle = 3 * time.Second

// latencies runs a raw watch, dynwatch, and dynwatch with state (restarted on
// the state of the sync runs) side by side, makes o.updates updates, and
// collects when each process saw each one and what CPU it spent meanwhile;
// and how long the spaced updates took to write, from the first write to the
// last, and the burst, from its first write until every process had seen it.
func latencies(ctx context.Context, o options, env *testenv.Env, d dynamic.Interface, v variant, ns, statePath string) (_ []latencyResult, spacedTook, burstTook time.Duration, _ error) {
	runs := []syncRun{{"raw watch", "rawwatch", ""}, {"dynwatch", "dynwatch", ""}, {"dynwatch, state", "dynwatch", statePath}}
	procs := make([]*proc, len(runs))
	for i, s := range runs {
		prof := ""
		if o.profile != "" {
			prof = o.profile + "/latency"
			if err := os.MkdirAll(prof, 0o755); err != nil {
				return nil, 0, 0, err
			}
		}
		p, err := start(s.mode, env.Kubeconfig, v, ns, s.state, prof)
		if err != nil {
			return nil, 0, 0, err
		}
		defer func() { _ = p.stop() }()
		if err := p.waitSynced(5 * time.Minute); err != nil {
			return nil, 0, 0, fmt.Errorf("%s: %w", s.label, err)
		}
		procs[i] = p
	}
	// Spaced updates: the latency of each, and the CPU per event at that
	// pace (idle costs included: the figure a steady flow pays), once what
	// follows a sync (the state's comparison, memory handed back) is done.
	time.Sleep(settle)
	cpuSpaced0, err := cpus(procs)
	if err != nil {
		return nil, 0, 0, err
	}
	if spacedTook, err = update(ctx, d, v, ns, o.updates, o.n, o.interval, 1); err != nil {
		return nil, 0, 0, err
	}
	waitReceived(procs, o.updates)
	cpuSpaced1, err := cpus(procs)
	if err != nil {
		return nil, 0, 0, err
	}
	out := make([]latencyResult, len(runs))
	for i, p := range procs {
		lat := p.latencies()
		out[i] = latencyResult{label: runs[i].label, lat: lat, received: len(lat), spacedCPU: cpuSpaced1[i] - cpuSpaced0[i]}
	}
	// A burst, as fast as four writers go: the CPU each process spends per
	// event, with its idle costs (GC, timers, pings) spread thin.
	cpu0, err := cpus(procs)
	if err != nil {
		return nil, 0, 0, err
	}
	burst := time.Now()
	if _, err := update(ctx, d, v, ns, o.burst, o.n, 0, 4); err != nil {
		return nil, 0, 0, err
	}
	waitReceived(procs, o.updates+o.burst)
	burstTook = time.Since(burst)
	cpu1, err := cpus(procs)
	if err != nil {
		return nil, 0, 0, err
	}
	for i, p := range procs {
		out[i].burst = len(p.latencies()) - out[i].received
		out[i].cpu = cpu1[i] - cpu0[i]
	}
	return out, spacedTook, burstTook, nil
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

// update writes n updates to the objects in turn with the given writers, each
// stamped with when it was written, and returns how long it took from the
// first write's start to the last's. With an interval, writes start interval
// apart (one writer: 1/interval a second, as long as a write takes less than
// interval), and one that starts late moves the writes after it, which never
// catch up; without, they go as fast as the writers go.
func update(ctx context.Context, d dynamic.Interface, v variant, ns string, n, objects int, interval time.Duration, writers int) (time.Duration, error) {
	ri := d.Resource(v.gvr).Namespace(ns)
	var mu sync.Mutex
	var first, next, last time.Time
	err := parallel(n, writers, func(i int) error {
		mu.Lock()
		at := latest(next, time.Now())
		next = at.Add(interval)
		mu.Unlock()
		time.Sleep(time.Until(at))
		now := time.Now()
		mu.Lock()
		if first.IsZero() {
			first = now
		}
		last = latest(last, now)
		mu.Unlock()
		name := v.make(ns, i%objects)["metadata"].(map[string]any)["name"].(string)
		patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, latencyAnnotation, strconv.FormatInt(now.UnixNano(), 10))
		_, err := ri.Patch(ctx, name, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
		return err
	})
	return last.Sub(first), err
}

// listBytes returns the size of the objects' JSON as the API server serves
// them, and how much of it is managedFields.
func listBytes(ctx context.Context, cfg *rest.Config, v variant, ns string) (total, managed int64, err error) {
	err = eachPage(ctx, cfg, v, ns, func(body []byte) {
		gjson.GetBytes(body, "items").ForEach(func(_, item gjson.Result) bool {
			total += int64(len(item.Raw))
			managed += int64(len(item.Get("metadata.managedFields").Raw))
			return true
		})
	})
	return total, managed, err
}

// eachPage reads the objects of v in ns a page of 500 at a time, as bytes.
func eachPage(ctx context.Context, cfg *rest.Config, v variant, ns string, page func([]byte)) error {
	client, err := rest.RESTClientFor(restConfigFor(cfg))
	if err != nil {
		return err
	}
	cont := ""
	for {
		req := client.Get().AbsPath(apiPath(v, ns)...).Param("limit", "500")
		if cont != "" {
			req = req.Param("continue", cont)
		}
		body, err := req.DoRaw(ctx)
		if err != nil {
			return err
		}
		page(body)
		if cont = gjson.GetBytes(body, "metadata.continue").Str; cont == "" {
			return nil
		}
	}
}

func latest(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
