// Command benche2e measures dynwatch against the floor and the usual way, side
// by side in one run on a local API server: a raw paginated LIST, a raw
// watch-list stream, a plain client-go dynamic informer, a typed protobuf
// informer, and dynwatch with and without restart state (sync time, peak RSS,
// CPU, heap per JSON byte), then the latency of updates through dynwatch
// against a raw watch. Each is a process of its own (this binary, re-run as a
// child; or -peer, another watcher), run one after the other, so that RSS and
// CPU are the process's. Variants: Deployments; ConfigMaps at the sizes of
// -curve; many CRDs with one object each under a rule on every resource; and
// dynwatch idling on the Deployments for -idle-window. It prints the goals as
// ratios from the one run, met or not; `make bench-e2e` runs it; it asserts
// nothing.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"k8s.io/client-go/dynamic"

	"github.com/dynwatch/dynwatch/internal/testenv"
)

type options struct {
	n        int
	variants []string
	updates  int
	count    int
	burst    int
	profile  string
	interval time.Duration
	idle     time.Duration
	// shards are the shard counts of the sharded run; none skips it, and
	// shardsOnly runs nothing else.
	shards     []int
	shardsOnly bool
	curve      []int
	crds       int
	window     time.Duration
	peer       string
	peerArgs   string
}

func main() {
	var o options
	var vs string
	c := &child{}
	var variantName string
	flag.IntVar(&o.n, "n", 10000, "objects per variant")
	var curve string
	flag.StringVar(&vs, "variants", "deployments,configmaps,crds,idle", "which objects: deployments (a built-in kind), crd (a custom resource of the same size), configmaps (1 KB each, at the sizes of -curve), crds (-crds definitions, one object each, a rule on every resource), idle (dynwatch on the -n Deployments for -idle-window)")
	flag.StringVar(&curve, "curve", "1000,10000,100000", "the numbers of ConfigMaps measured, ascending")
	flag.IntVar(&o.crds, "crds", 300, "custom resource definitions of the crds variant")
	flag.DurationVar(&o.window, "idle-window", 5*time.Minute, "how long the idle variant measures dynwatch's CPU with the Deployments cached")
	flag.StringVar(&o.peer, "peer", "", "another watcher binary, run on deployments and configmaps as the processes are and checked against the same goals")
	flag.StringVar(&o.peerArgs, "peer-args", "--kubeconfig {kubeconfig} --namespace {ns}", "the peer's arguments; {kubeconfig} and {ns} are filled in")
	flag.IntVar(&o.updates, "updates", 500, "updates made in the latency phase")
	flag.DurationVar(&o.interval, "interval", 10*time.Millisecond, "time between two updates of the latency phase (one every interval)")
	flag.IntVar(&o.burst, "burst", 2000, "updates made as fast as four writers go, for the CPU per event")
	flag.IntVar(&o.count, "count", 3, "runs of each process in the sync phase; the median of each figure is reported")
	flag.DurationVar(&o.idle, "idle", 2*time.Second, "how long each process idles after its initial sync before it is stopped")
	flag.StringVar(&c.mode, "child", "", "internal: run as a measured process of this mode")
	flag.StringVar(&c.kubeconfig, "kubeconfig", "", "internal: the child's cluster")
	flag.StringVar(&variantName, "variant", "", "internal: the child's objects")
	flag.StringVar(&c.ns, "ns", "", "internal: the child's namespace")
	flag.StringVar(&c.state, "state", "", "internal: the child's state file (dynwatch)")
	var shards string
	flag.StringVar(&shards, "shards", "1,2,4", "shard counts of the sharded run (each shard a process, all at once, with the server filtering and with the client filtering); empty skips it")
	flag.BoolVar(&o.shardsOnly, "shards-only", false, "run only the sharded run")
	flag.IntVar(&c.shardCount, "shard-count", 0, "internal: the child's shards.count (dynwatch)")
	flag.IntVar(&c.shardIndex, "shard-index", 0, "internal: the child's shards.index (dynwatch)")
	flag.StringVar(&c.profile, "profile", "", "write CPU and heap profiles of every measured process into this directory (made if missing), one set per run, named mode.pid")
	flag.Parse()
	if c.mode != "" {
		c.v = variantNamed(variantName)
		if err := runChild(c); err != nil {
			fmt.Fprintln(os.Stderr, "bench-e2e child:", err)
			os.Exit(1)
		}
		return
	}
	o.variants = strings.Split(vs, ",")
	for _, f := range strings.Split(shards, ",") {
		if n, err := strconv.Atoi(f); err == nil && n > 0 {
			o.shards = append(o.shards, n)
		}
	}
	for _, f := range strings.Split(curve, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n <= 0 {
			fmt.Fprintln(os.Stderr, "bench-e2e: -curve: not a number of objects:", f)
			os.Exit(2)
		}
		o.curve = append(o.curve, n)
	}
	o.profile = c.profile
	if o.profile != "" {
		if err := os.MkdirAll(o.profile, 0o755); err != nil {
			fmt.Fprintln(os.Stderr, "bench-e2e: -profile:", err)
			os.Exit(2)
		}
	}
	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "bench-e2e:", err)
		os.Exit(1)
	}
}

func say(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "bench-e2e: "+format+"\n", args...)
}

func run(o options) error {
	ctx := context.Background()
	say("starting etcd and kube-apiserver")
	env, err := testenv.Start(testenv.Options{})
	if err != nil {
		return err
	}
	defer env.Stop()
	d, err := dynamic.NewForConfig(env.Config)
	if err != nil {
		return err
	}
	env.Config.QPS, env.Config.Burst = -1, 0
	dir, err := os.MkdirTemp("", "bench-e2e-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	fmt.Printf("# dynwatch bench-e2e: %d objects per variant, %d updates; %s\n\n", o.n, o.updates, machine())
	var failed []string
	for _, name := range o.variants {
		// A variant that fails is said and skipped: the others still run.
		if err := runVariant(ctx, o, env, d, name, dir); err != nil {
			say("%s: %v", name, err)
			fmt.Printf("## %s: failed: %v\n\n", name, err)
			failed = append(failed, name)
		}
	}
	if len(failed) > 0 {
		return fmt.Errorf("failed: %s", strings.Join(failed, ", "))
	}
	return nil
}

func variantNamed(name string) variant {
	switch name {
	case manyCRDs.name:
		return manyCRDs
	case emptyNS.name:
		return emptyNS
	}
	return variants[name]
}

func runVariant(ctx context.Context, o options, env *testenv.Env, d dynamic.Interface, name, dir string) error {
	switch name {
	case "configmaps":
		return runCurve(ctx, o, env, d)
	case manyCRDs.name:
		return runManyCRDs(ctx, o, env, d)
	case "idle":
		return runIdle(ctx, o, env, d)
	}
	v, ok := variants[name]
	if !ok {
		return fmt.Errorf("unknown variant %q", name)
	}
	if v.name == "crd" {
		if err := installCRD(ctx, d); err != nil {
			return err
		}
	}
	ns := "bench-" + v.name
	say("%s: creating %d objects", v.name, o.n)
	if err := populate(ctx, d, v, ns, 0, o.n); err != nil {
		return err
	}
	if !o.shardsOnly {
		r, err := measure(ctx, o, env, d, v, ns, filepath.Join(dir, v.name+".db"))
		if err != nil {
			return err
		}
		r.print(o)
	}
	return shardedRun(ctx, o, env, v, ns)
}

// measure runs every process on the objects of v, one after the other, then
// the latency phase.
func measure(ctx context.Context, o options, env *testenv.Env, d dynamic.Interface, v variant, ns, statePath string) (*result, error) {
	r := &result{v: v, n: o.n}
	var err error
	if r.jsonBytes, r.managedBytes, err = listBytes(ctx, env.Config, v, ns); err != nil {
		return nil, err
	}
	runs := syncRuns(statePath)
	if v.name != "deployments" {
		runs = slices.DeleteFunc(runs, func(s syncRun) bool { return s.mode == "typed" })
	}
	if r.syncs, err = syncAll(o, env, v, ns, append(runs, peerRun(o)...)); err != nil {
		return nil, err
	}
	say("%s: latency of %d updates", v.name, o.updates)
	if r.lat, r.spacedTook, r.burstTook, err = latencies(ctx, o, env, d, v, ns, statePath); err != nil {
		return nil, err
	}
	return r, nil
}

// syncAll runs each of runs o.count times, one after the other, and takes
// the median of each.
func syncAll(o options, env *testenv.Env, v variant, ns string, runs []syncRun) ([]syncResult, error) {
	var out []syncResult
	for _, s := range runs {
		var each []syncResult
		for i := range o.count {
			say("%s: %s (%d/%d)", v.name, s.label, i+1, o.count)
			sr, err := syncOnce(o, env, v, ns, s)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", s.label, err)
			}
			each = append(each, sr)
		}
		out = append(out, median(each))
	}
	return out, nil
}

func peerRun(o options) []syncRun {
	if o.peer == "" {
		return nil
	}
	return []syncRun{{"peer " + filepath.Base(o.peer), "peer", ""}}
}

// syncOnce runs one process until it has synced and idled, then stops it.
func syncOnce(o options, env *testenv.Env, v variant, ns string, s syncRun) (syncResult, error) {
	var p *proc
	var err error
	if s.mode == "peer" {
		p, err = startPeer(o.peer, o.peerArgs, env.Kubeconfig, ns)
	} else {
		p, err = start(s.mode, env.Kubeconfig, v, ns, s.state, o.profile)
	}
	if err != nil {
		return syncResult{}, err
	}
	if err := p.waitSynced(5 * time.Minute); err != nil {
		return syncResult{}, err
	}
	time.Sleep(o.idle)
	if err := p.stop(); err != nil {
		return syncResult{}, err
	}
	return syncResult{label: s.label, sync: p.sync, heap: p.heap, rss: p.rss, anon: p.anon.Load(), cpu: p.cpu,
		discovery: p.discovery, resources: p.resources, goroutines: p.goroutines, discoveryEnd: p.discoveryEnd}, nil
}

type syncRun struct{ label, mode, state string }

func syncRuns(statePath string) []syncRun {
	return []syncRun{
		{"raw paginated LIST", "list", ""},
		{"raw watch-list stream", "watchlist", ""},
		floorRuns[0], floorRuns[1],
		{"client-go dynamic informer", "dynamic", ""},
		{"client-go typed informer (protobuf)", "typed", ""},
		{"dynwatch", "dynwatch", ""},
		{"dynwatch, compression off", "dynwatch-nogzip", ""},
		{"dynwatch, GOGC=100 in the sync", "dynwatch-gogc100", ""},
		{"dynwatch, state (first start)", "dynwatch", statePath},
		{"dynwatch, state (restart)", "dynwatch", statePath},
	}
}
