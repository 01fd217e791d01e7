package main

import (
	"fmt"
	"os"
	"strings"
)

func mkdir(dir string) error { return os.MkdirAll(dir, 0o755) }

// printCurve prints the ConfigMaps at each size, and the goals at each.
func printCurve(o options, floor syncResult, points []point) {
	last := points[len(points)-1]
	fmt.Printf("## configmaps: 1 KB of data each, at %d sizes; %s per object as served at %d (%.0f%% of it managedFields)\n\n",
		len(points), fmt.Sprintf("%.0f B", float64(last.jsonBytes)/float64(last.n)), last.n, 100*float64(last.managedBytes)/float64(last.jsonBytes))
	fmt.Printf("%s idles at %s peak RSS.\n\n", floor.label, mb(floor.rss))
	fmt.Printf("| objects | process (median of %d runs) | initial sync | µs of sync per object | peak RSS | CPU | µs of CPU per object | heap per object | above its JSON kept |\n|---|---|---|---|---|---|---|---|---|\n", o.count)
	for _, p := range points {
		kept := float64(p.jsonBytes-p.managedBytes) / float64(p.n)
		for _, s := range p.syncs {
			heap := fmt.Sprintf("%.0f B | %.0f B", float64(s.heap)/float64(p.n), float64(s.heap)/float64(p.n)-kept)
			if keepsNothing(s.label) || strings.HasPrefix(s.label, "peer ") {
				heap = "| "
			}
			fmt.Printf("| %d | %s | %s | %.1f | %s | %s | %.1f | %s |\n", p.n, s.label, secs(s.sync), float64(s.sync.Microseconds())/float64(p.n),
				mb(s.rss), secs(s.cpu), float64(s.cpu.Microseconds())/float64(p.n), heap)
		}
	}
	var rows []goalRow
	for _, p := range points {
		dw, typed, wl := p.sync("dynwatch"), p.sync("client-go typed informer (protobuf)"), p.sync("raw watch-list stream")
		kept := p.jsonBytes - p.managedBytes
		rows = append(rows,
			goalRow{fmt.Sprintf("%d: peak RSS, dynwatch / typed informer", p.n), float64(dw.rss) / float64(typed.rss), 0.4},
			goalRow{fmt.Sprintf("%d: CPU, dynwatch / typed informer", p.n), float64(dw.cpu) / float64(typed.cpu), 0.4},
			goalRow{fmt.Sprintf("%d: peak RSS, dynwatch / (idle RSS + bytes kept)", p.n), float64(dw.rss) / float64(floor.rss+kept), 1.5},
			goalRow{fmt.Sprintf("%d: initial sync, dynwatch / raw watch-list stream", p.n), float64(dw.sync) / float64(wl.sync), 1.3})
		for _, s := range p.syncs {
			if strings.HasPrefix(s.label, "peer ") {
				rows = append(rows,
					goalRow{fmt.Sprintf("%d: peak RSS, dynwatch / %s", p.n, s.label), float64(dw.rss) / float64(s.rss), 0.4},
					goalRow{fmt.Sprintf("%d: CPU, dynwatch / %s", p.n, s.label), float64(dw.cpu) / float64(s.cpu), 0.4})
			}
		}
	}
	// No phase worse than linear: the cost per object at the largest size
	// against the one before it (the smallest is mostly fixed costs).
	if len(points) >= 2 {
		a, b := points[len(points)-2], last
		per := func(p point, f func(syncResult) float64) float64 { return f(p.sync("dynwatch")) / float64(p.n) }
		for _, m := range []struct {
			what string
			f    func(syncResult) float64
		}{
			{"initial sync", func(s syncResult) float64 { return float64(s.sync) }},
			{"CPU", func(s syncResult) float64 { return float64(s.cpu) }},
			{"live heap", func(s syncResult) float64 { return float64(s.heap) }},
		} {
			rows = append(rows, goalRow{fmt.Sprintf("%s per object, dynwatch, %d / %d objects (linear: 1)", m.what, b.n, a.n), per(b, m.f) / per(a, m.f), 1.25})
		}
	}
	printGoals(rows)
	for _, p := range points {
		printFloors(fmt.Sprintf(" at %d", p.n), p.syncs)
	}
}
