package main

import (
	"context"
	"fmt"
	"time"

	"k8s.io/client-go/dynamic"

	"github.com/dynwatch/dynwatch/internal/testenv"
)

// idleFloor is dynwatch with one rule on an empty namespace: its peak RSS is
// what dynwatch costs before it keeps anything.
func idleFloor(o options, env *testenv.Env, d dynamic.Interface) (syncResult, error) {
	if err := populate(context.Background(), d, emptyNS, "bench-empty", 0, 0); err != nil {
		return syncResult{}, err
	}
	one := o
	one.profile = ""
	rs, err := syncAll(one, env, emptyNS, "bench-empty", []syncRun{{"dynwatch, idle (a rule on an empty namespace)", "dynwatch", ""}})
	if err != nil {
		return syncResult{}, err
	}
	return rs[0], nil
}

// point is the curve at one number of objects.
type point struct {
	n                       int
	jsonBytes, managedBytes int64
	syncs                   []syncResult
}

func (p point) sync(label string) syncResult {
	return (&result{syncs: p.syncs}).sync(label)
}

// runCurve measures the ConfigMaps at each size of o.curve: the raw watch-list
// stream, the typed informer, dynwatch (and the peer), side by side.
func runCurve(ctx context.Context, o options, env *testenv.Env, d dynamic.Interface) error {
	v, ns := variants["configmaps"], "bench-configmaps"
	floor, err := idleFloor(o, env, d)
	if err != nil {
		return err
	}
	runs := append([]syncRun{
		{"raw watch-list stream", "watchlist", ""},
		floorRuns[0], floorRuns[1],
		{"client-go typed informer (protobuf)", "typed", ""},
		{"dynwatch", "dynwatch", ""},
		{"dynwatch, GOGC=100 in the sync", "dynwatch-gogc100", ""},
	}, peerRun(o)...)
	var points []point
	have := 0
	for _, n := range o.curve {
		say("configmaps: creating objects %d to %d", have, n)
		if err := populate(ctx, d, v, ns, have, n); err != nil {
			return err
		}
		have = max(have, n)
		p := point{n: n}
		if p.jsonBytes, p.managedBytes, err = listBytes(ctx, env.Config, v, ns); err != nil {
			return err
		}
		at := o
		if o.profile != "" {
			at.profile = fmt.Sprintf("%s/configmaps-%d", o.profile, n)
			if err := mkdir(at.profile); err != nil {
				return err
			}
		}
		if p.syncs, err = syncAll(at, env, v, ns, runs); err != nil {
			return err
		}
		points = append(points, p)
	}
	printCurve(o, floor, points)
	return nil
}

// runManyCRDs measures dynwatch with a rule on every resource in a cluster of
// o.crds definitions with one object each.
func runManyCRDs(ctx context.Context, o options, env *testenv.Env, d dynamic.Interface) error {
	ns := "bench-crds"
	floor, err := idleFloor(o, env, d)
	if err != nil {
		return err
	}
	say("crds: creating %d definitions and one object of each", o.crds)
	began := time.Now()
	if err := installCRDs(ctx, d, ns, o.crds); err != nil {
		return err
	}
	say("crds: served after %s", time.Since(began).Round(time.Second))
	at := o
	// The idle after the sync covers a discovery refresh that a CRD's change
	// asks for (200 ms after it) and the one 2 s after that.
	at.idle = max(o.idle, 3*time.Second)
	if o.profile != "" {
		at.profile = o.profile + "/crds"
		if err := mkdir(at.profile); err != nil {
			return err
		}
	}
	rs, err := syncAll(at, env, manyCRDs, ns, []syncRun{{"dynwatch, a rule on every resource", "dynwatch", ""}})
	if err != nil {
		return err
	}
	dw := rs[0]
	fmt.Printf("## crds: %d custom resource definitions, one object each, a rule on every resource (resource: \"*\")\n\n", o.crds)
	fmt.Printf("| process (median of %d runs) | initial sync | peak RSS | CPU | resources watched | goroutines | discovery requests by the sync | and by %s after it |\n|---|---|---|---|---|---|---|---|\n", o.count, at.idle)
	for _, s := range []syncResult{floor, dw} {
		fmt.Printf("| %s | %s | %s | %s | %d | %d | %d | %d |\n", s.label, secs(s.sync), mb(s.rss), secs(s.cpu), s.resources, s.goroutines, s.discovery, s.discoveryEnd)
	}
	extra := float64(max(dw.resources-floor.resources, 1))
	fmt.Printf("\nPer watched resource beyond the idle one: %.0f KB of peak RSS, %.1f goroutines, %.1f ms of CPU.\n",
		float64(dw.rss-floor.rss)/extra/1e3, float64(dw.goroutines-floor.goroutines)/extra, float64((dw.cpu-floor.cpu).Microseconds())/extra/1e3)
	printGoals([]goalRow{
		{fmt.Sprintf("initial sync of %d resources, seconds / 10 s", dw.resources), dw.sync.Seconds() / 10, 1},
		{fmt.Sprintf("discovery requests by the initial sync and %s after it (one read), / the 2 of aggregated discovery", at.idle), float64(dw.discoveryEnd) / 2, 1},
	})
	return nil
}

// runIdle measures dynwatch with the Deployments cached and nothing changing,
// over o.window: CPU, and the growth of its heap and goroutines.
func runIdle(ctx context.Context, o options, env *testenv.Env, d dynamic.Interface) error {
	v, ns := variants["deployments"], "bench-deployments"
	if err := populate(ctx, d, v, ns, 0, o.n); err != nil {
		return err
	}
	say("idle: dynwatch on %d Deployments for %s", o.n, o.window)
	p, err := start("dynwatch", env.Kubeconfig, v, ns, "", "")
	if err != nil {
		return err
	}
	defer func() { _ = p.stop() }()
	if err := p.waitSynced(5 * time.Minute); err != nil {
		return err
	}
	time.Sleep(5 * time.Second) // the sync's garbage collected, its timers settled
	g0, h0, err := p.stat()
	if err != nil {
		return err
	}
	c0, err := p.cpuNow()
	if err != nil {
		return err
	}
	time.Sleep(o.window)
	c1, err := p.cpuNow()
	if err != nil {
		return err
	}
	g1, h1, err := p.stat()
	if err != nil {
		return err
	}
	share := float64(c1-c0) / float64(o.window)
	fmt.Printf("## idle: dynwatch with %d Deployments cached, nothing changing, %s\n\n", o.n, o.window)
	fmt.Printf("| | start of the window | end |\n|---|---|---|\n| live heap | %s | %s |\n| goroutines | %d | %d |\n| CPU in the window | | %s (%.2f%% of a core) |\n",
		mb(h0), mb(h1), g0, g1, secs(c1-c0), 100*share)
	printGoals([]goalRow{
		{"CPU, share of one core", share, 0.01},
		{"live heap, end / start", float64(h1) / float64(h0), 1.05},
		{"goroutines, end / start", float64(g1) / float64(g0), 1},
	})
	return nil
}
