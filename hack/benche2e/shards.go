package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/dynwatch/dynwatch/internal/testenv"
)

// recvCounter counts the response bytes a child's clients read.
type recvCounter struct{ n atomic.Int64 }

type countingBody struct {
	io.ReadCloser
	n *atomic.Int64
}

func (b countingBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.n.Add(int64(n))
	return n, err
}

type countingTransport struct {
	rt http.RoundTripper
	n  *atomic.Int64
}

func (t countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := t.rt.RoundTrip(r)
	if resp != nil && resp.Body != nil {
		resp.Body = countingBody{resp.Body, t.n}
	}
	return resp, err
}

// countReceived makes every client of cfg count what it reads (after
// decompression: what the decoder sees).
func countReceived(cfg *rest.Config) *recvCounter {
	c := &recvCounter{}
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return countingTransport{rt, &c.n} })
	return c
}

func mb1(b int64) string { return fmt.Sprintf("%.1f MB", float64(b)/1e6) }

// shardFigures are one shard process's figures.
type shardFigures struct {
	sync      time.Duration
	rss, recv int64
	cpu       time.Duration
}

// shardedRun measures a shard set of each count in o.shards on the objects of
// v, every shard a process, all at once: on an API server with the
// ShardedListAndWatch feature (the server filters) and on env, without it
// (each shard receives everything and filters). The process floor is a
// dynwatch on an empty namespace.
func shardedRun(ctx context.Context, o options, env *testenv.Env, v variant, ns string) error {
	if len(o.shards) == 0 {
		return nil
	}
	say("sharded run: starting a second API server, with ShardedListAndWatch")
	gated, err := testenv.Start(testenv.Options{FeatureGates: []string{"ShardedListAndWatch"}})
	if err != nil {
		return err
	}
	defer gated.Stop()
	gd, err := dynamic.NewForConfig(gated.Config)
	if err != nil {
		return err
	}
	if v.name == "crd" {
		if err := installCRD(ctx, gd); err != nil {
			return err
		}
	}
	say("sharded run: %s: creating %d objects on it", v.name, o.n)
	if err := populate(ctx, gd, v, ns, 0, o.n); err != nil {
		return err
	}
	floor, err := shardSet(o, env, v, "bench-empty", 0)
	if err != nil {
		return err
	}
	fmt.Printf("## %s: shards, %d objects; process floor (dynwatch on no objects): peak RSS %s, received %s\n\n", v.name, o.n, mb(floor[0].rss), mb1(floor[0].recv))
	fmt.Println("| filter | shards | shard | initial sync | peak RSS | CPU | received |\n|---|---|---|---|---|---|---|")
	var goals []string
	for _, side := range []struct {
		name string
		env  *testenv.Env
	}{{"server", gated}, {"client", env}} {
		var one shardFigures
		for _, count := range o.shards {
			say("sharded run: %s: %d shards, %s filtering", v.name, count, side.name)
			figs, err := shardSet(o, side.env, v, ns, count)
			if err != nil {
				return err
			}
			if count == 1 {
				one = figs[0]
			}
			for i, f := range figs {
				fmt.Printf("| %s | %d | %d | %s | %s | %s | %s |\n", side.name, count, i, secs(f.sync), mb(f.rss), secs(f.cpu), mb1(f.recv))
			}
			if count > 1 && one.rss > 0 {
				goals = append(goals, shardGoals(side.name, count, figs, one, floor[0])...)
			}
		}
	}
	fmt.Println("\n| a shard / one process, above the floor | mean shard | worst shard | goal (mean) | |\n|---|---|---|---|---|")
	for _, g := range goals {
		fmt.Println(g)
	}
	fmt.Println()
	return nil
}

// shardGoals are the goal rows of a set of count shards: a shard costs at
// most 1/count of one process above the floor, in memory (both filters) and in
// bytes received (the server's). The goal is judged on the shards' mean: the
// uids' hashes split a set of objects only about evenly, so one shard's share
// is a little more than 1/count as often as not; the worst shard is shown too.
func shardGoals(side string, count int, figs []shardFigures, one, floor shardFigures) []string {
	type ratio struct{ worst, sum float64 }
	var rss, recv, cpu ratio
	add := func(r *ratio, v, one, floor int64) {
		x := float64(v-floor) / float64(one-floor)
		r.worst, r.sum = max(r.worst, x), r.sum+x
	}
	for _, f := range figs {
		add(&rss, f.rss, one.rss, floor.rss)
		add(&recv, f.recv, one.recv, floor.recv)
		add(&cpu, int64(f.cpu), int64(one.cpu), int64(floor.cpu))
	}
	goal := 1 / float64(count)
	row := func(what string, r ratio, has bool) string {
		mean := r.sum / float64(count)
		if !has {
			return fmt.Sprintf("| %s, %d shards, %s filter | %.4f | %.4f | (none) | |", what, count, side, mean, r.worst)
		}
		met := "met"
		if mean > goal {
			met = "**not met**"
		}
		return fmt.Sprintf("| %s, %d shards, %s filter | %.4f | %.4f | ≤ %.4f | %s |", what, count, side, mean, r.worst, goal, met)
	}
	return []string{row("peak RSS", rss, true), row("bytes received", recv, side == "server"), row("CPU", cpu, false)}
}

// shardSet runs count shard processes of dynwatch at once (count 0: one
// without shards) until each has synced and idled.
func shardSet(o options, env *testenv.Env, v variant, ns string, count int) ([]shardFigures, error) {
	var procs []*proc
	defer func() {
		for _, p := range procs {
			if p.cmd.ProcessState == nil {
				_ = p.cmd.Process.Kill()
			}
		}
	}()
	for i := range max(count, 1) {
		p, err := start("dynwatch", env.Kubeconfig, v, ns, "", o.profile, "-shard-count", strconv.Itoa(count), "-shard-index", strconv.Itoa(i))
		if err != nil {
			return nil, err
		}
		procs = append(procs, p)
	}
	for _, p := range procs {
		if err := p.waitSynced(5 * time.Minute); err != nil {
			return nil, err
		}
	}
	time.Sleep(o.idle)
	out := make([]shardFigures, len(procs))
	for i, p := range procs {
		if err := p.stop(); err != nil {
			return nil, err
		}
		out[i] = shardFigures{sync: p.sync, rss: p.rss, recv: p.recv, cpu: p.cpu}
	}
	return out, nil
}
