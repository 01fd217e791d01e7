package main

import (
	"fmt"
	"os"
	"runtime"
	"slices"
	"strings"
	"time"
)

type syncResult struct {
	label string
	sync  time.Duration
	heap  int64
	rss   int64
	anon  int64 // peak anonymous RSS: rss without the binary's pages
	cpu   time.Duration
	// dynwatch's, from its first run: discovery requests and resources
	// watched by its initial sync, and goroutines then.
	discovery, resources, goroutines int64
	// discoveryEnd is its discovery requests by the time it was stopped:
	// the sync's, and those of the idle after it.
	discoveryEnd int64
}

type result struct {
	v                       variant
	n                       int
	jsonBytes, managedBytes int64
	syncs                   []syncResult
	lat                     []latencyResult
	// spacedTook is how long the latency phase's spaced updates took to
	// write, from the first write to the last; burstTook how long its burst
	// took, from its first write until every process had seen it.
	spacedTook, burstTook time.Duration
}

// median takes the median of each figure over the runs of one process.
func median(runs []syncResult) syncResult {
	mid := func(vals []int64) int64 {
		slices.Sort(vals)
		return vals[len(vals)/2]
	}
	var sync, heap, rss, anon, cpu []int64
	for _, r := range runs {
		sync, heap, rss, cpu = append(sync, int64(r.sync)), append(heap, r.heap), append(rss, r.rss), append(cpu, int64(r.cpu))
		anon = append(anon, r.anon)
	}
	return syncResult{label: runs[0].label, sync: time.Duration(mid(sync)), heap: mid(heap), rss: mid(rss), anon: mid(anon), cpu: time.Duration(mid(cpu)),
		discovery: runs[0].discovery, resources: runs[0].resources, goroutines: runs[0].goroutines, discoveryEnd: runs[0].discoveryEnd}
}

func machine() string {
	host, _ := os.Hostname()
	return fmt.Sprintf("%s, %d CPUs, %s/%s, %s", host, runtime.NumCPU(), runtime.GOOS, runtime.GOARCH, time.Now().UTC().Format("2006-01-02"))
}

func mb(b int64) string { return fmt.Sprintf("%.0f MB", float64(b)/1e6) }

func secs(d time.Duration) string { return fmt.Sprintf("%.2f s", d.Seconds()) }

func ms(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d.Microseconds())/1000) }

func pct(lat []time.Duration, p int) time.Duration {
	if len(lat) == 0 {
		return 0
	}
	s := slices.Clone(lat)
	slices.Sort(s)
	return s[min(len(s)-1, len(s)*p/100)]
}

func (r *result) sync(label string) syncResult {
	for _, s := range r.syncs {
		if s.label == label {
			return s
		}
	}
	return syncResult{}
}

func (r *result) print(o options) {
	fmt.Printf("## %s: %d %s, %s of JSON as served (%.0f%% of it managedFields)\n\n", r.v.name, r.n, r.v.kind, mb(r.jsonBytes), 100*float64(r.managedBytes)/float64(r.jsonBytes))
	fmt.Printf("| process (median of %d runs) | initial sync | peak RSS | peak anonymous RSS | CPU | heap per JSON byte |\n", o.count)
	fmt.Println("|---|---|---|---|---|---|")
	for _, s := range r.syncs {
		heap := fmt.Sprintf("%.2f", float64(s.heap)/float64(r.jsonBytes))
		if keepsNothing(s.label) {
			heap = "(keeps nothing)"
		}
		if strings.HasPrefix(s.label, "peer ") {
			heap = "(not known)"
		}
		anon := mb(s.anon)
		if s.anon == 0 {
			anon = "(not known)"
		}
		fmt.Printf("| %s | %s | %s | %s | %s | %s |\n", s.label, secs(s.sync), mb(s.rss), anon, secs(s.cpu), heap)
	}
	rate := 0.0
	if r.burstTook > 0 {
		rate = float64(o.burst) / r.burstTook.Seconds()
	}
	fmt.Printf("\n| process (side by side) | latency p50 (%d updates, one every %s: %.0f a second) | p99 | CPU per event at that pace | CPU per event (a burst of %d, %.0f a second) |\n|---|---|---|---|---|\n",
		o.updates, o.interval, r.spacedRate(o), o.burst, rate)
	for _, l := range r.lat {
		spaced := "—" // an update not seen: the CPU figure would count the wait for it
		if l.received == o.updates {
			spaced = fmt.Sprintf("%.0f µs", float64(l.spacedCPU.Microseconds())/float64(l.received))
		}
		fmt.Printf("| %s | %s | %s | %s | %.0f µs |\n", l.label, ms(pct(l.lat, 50)), ms(pct(l.lat, 99)),
			spaced, float64(l.cpu.Microseconds())/float64(max(l.burst, 1)))
		if l.received < o.updates || l.burst < o.burst {
			fmt.Printf("| (%s saw %d of %d updates and %d of %d of the burst) | | | | |\n", l.label, l.received, o.updates, l.burst, o.burst)
		}
	}
	r.printRatios(o)
}

// printRatios prints the goals of the issue as measured ratios.
func (r *result) printRatios(o options) {
	dyn, dw := r.sync("client-go dynamic informer"), r.sync("dynwatch")
	list, first, restart := r.sync("raw paginated LIST"), r.sync("dynwatch, state (first start)"), r.sync("dynwatch, state (restart)")
	perEvent := func(l latencyResult) float64 { return float64(l.cpu) / float64(max(l.burst, 1)) }
	spacedPerEvent := func(l latencyResult) float64 { return float64(l.spacedCPU) / float64(max(l.received, 1)) }
	raw, live, stated := r.lat[0], r.lat[1], r.lat[2]
	rows := []goalRow{
		{"peak RSS, dynwatch / dynamic informer", float64(dw.rss) / float64(dyn.rss), 0.13},
		{"CPU, dynwatch / dynamic informer", float64(dw.cpu) / float64(dyn.cpu), 0.05},
		{"peak RSS above the raw LIST's, dynwatch / dynamic informer", float64(dw.rss-list.rss) / float64(dyn.rss-list.rss), 0.13},
		{"CPU above the raw LIST's, dynwatch / dynamic informer", float64(dw.cpu-list.cpu) / float64(dyn.cpu-list.cpu), 0.05},
		{"heap per JSON byte, dynwatch", float64(dw.heap) / float64(r.jsonBytes), 1.3},
		{"initial sync, dynwatch / raw LIST", float64(dw.sync) / float64(list.sync), 1.2},
		{"initial sync, dynwatch / raw watch-list stream", float64(dw.sync) / float64(r.sync("raw watch-list stream").sync), 1.2},
		{"latency p99, dynwatch / raw watch", float64(pct(live.lat, 99)) / float64(pct(raw.lat, 99)), 2},
		{"latency p99, dynwatch with state / raw watch", float64(pct(stated.lat, 99)) / float64(pct(raw.lat, 99)), 2},
		{"startup with state (first) / without", float64(first.sync) / float64(dw.sync), 1.2},
		{"startup with state (restart) / without", float64(restart.sync) / float64(dw.sync), 1.2},
		{"CPU per event, with state / without (the burst)", perEvent(stated) / perEvent(live), 1.5},
	}
	spacedSeen := live.received == o.updates && stated.received == o.updates
	if spacedSeen {
		rows = append(rows, goalRow{fmt.Sprintf("CPU per event, with state / without (spaced, %.0f a second)", r.spacedRate(o)), spacedPerEvent(stated) / spacedPerEvent(live), 1.5})
	}
	var against []goalRow
	for _, s := range r.syncs {
		if s.label == "client-go typed informer (protobuf)" || strings.HasPrefix(s.label, "peer ") {
			against = append(against,
				goalRow{"peak RSS, dynwatch / " + s.label, float64(dw.rss) / float64(s.rss), 0.25},
				goalRow{"CPU, dynwatch / " + s.label, float64(dw.cpu) / float64(s.cpu), 0.5})
			if s.anon > 0 && dw.anon > 0 {
				against = append(against, goalRow{"peak anonymous RSS (the binary's pages left out), dynwatch / " + s.label, float64(dw.anon) / float64(s.anon), 0.25})
			}
		}
	}
	rows = append(rows[:4:4], append(against, rows[4:]...)...)
	if off := r.sync("dynwatch, compression off"); off.cpu > 0 {
		fmt.Printf("\nCompression off (DisableCompression, loopback): CPU %.2f×, peak RSS %.2f×, initial sync %.2f× dynwatch's with it on; on a network the %s of JSON would cross uncompressed.\n",
			float64(off.cpu)/float64(dw.cpu), float64(off.rss)/float64(dw.rss), float64(off.sync)/float64(dw.sync), mb(r.jsonBytes))
	}
	printGoals(rows)
	printFloors("", r.syncs)
	fmt.Printf("State costs %.0f µs of CPU per event over no state in a burst of %d", (perEvent(stated)-perEvent(live))/1e3, o.burst)
	if spacedSeen {
		fmt.Printf(", %.0f µs at %.0f a second", (spacedPerEvent(stated)-spacedPerEvent(live))/1e3, r.spacedRate(o))
	}
	fmt.Print(" (the store's writes and fsyncs).\n\n")
}

// spacedRate is how many spaced updates a second the latency phase wrote.
func (r *result) spacedRate(o options) float64 {
	if r.spacedTook <= 0 || o.updates < 2 {
		return 0
	}
	return float64(o.updates-1) / r.spacedTook.Seconds()
}

// goalRow is one goal of the issue: a ratio measured in this run, and the
// most it may be.
type goalRow struct {
	what        string
	ratio, goal float64
}

func printGoals(rows []goalRow) {
	fmt.Println("\n| ratio (one run) | measured | goal | |\n|---|---|---|---|")
	for _, row := range rows {
		met := "met"
		if row.ratio > row.goal || row.ratio != row.ratio { // NaN: not measured
			met = "**not met**"
		}
		fmt.Printf("| %s | %.3f | ≤ %.2f | %s |\n", row.what, row.ratio, row.goal, met)
	}
	fmt.Println()
}
