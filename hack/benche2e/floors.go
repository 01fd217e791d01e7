package main

import (
	"context"
	"fmt"
	"log/slog"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"

	"github.com/dynwatch/dynwatch/dyninformer"
	"github.com/dynwatch/dynwatch/event"
	"github.com/dynwatch/dynwatch/internal/memory"
)

// Between the raw watch-list stream (bytes, split at newlines, kept nowhere)
// and dynwatch, two floors tell where the CPU goes: dynwatch's decoder alone
// (each object split out and its metadata read, then dropped), and its
// informer with a handler that does nothing (client-go's reflector, FIFO and
// store keep the objects; no rule, no event is routed).
var floorRuns = []syncRun{
	{"dynwatch's decoder alone (a watch-list stream, objects dropped)", "decode", ""},
	{"dynwatch's informer alone (objects kept, a handler that does nothing)", "informer", ""},
}

// quiet is a child's logger for what it does not report.
var quiet = slog.New(slog.DiscardHandler)

// decode reads the initial list as a watch-list stream through dynwatch's
// client (framer and codec, client-go's stream watcher) and drops each object.
func (c *child) decode(ctx context.Context, cfg *rest.Config, synced func()) error {
	memory.SetLimit(quiet, "/")
	client, err := dyninformer.NewClient(cfg)
	if err != nil {
		return err
	}
	sendInitial := true
	w, err := client.Watch(ctx, c.v.gvr, c.ns, metav1.ListOptions{
		SendInitialEvents: &sendInitial, ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan, AllowWatchBookmarks: true,
	})
	if err != nil {
		return err
	}
	defer w.Stop()
	listed := false
	for ev := range w.ResultChan() {
		if ev.Type == watch.Error {
			if ctx.Err() != nil {
				return nil // stopped: the stream's end reads as an error event
			}
			return fmt.Errorf("watch: %v", ev.Object)
		}
		if !listed && ev.Type == watch.Bookmark {
			if o, ok := ev.Object.(metav1.Object); ok && o.GetAnnotations()[metav1.InitialEventsAnnotationKey] == "true" {
				listed = true
				synced()
			}
		}
	}
	if ctx.Err() == nil {
		return fmt.Errorf("watch ended before it was stopped")
	}
	return nil
}

// informer runs dynwatch's informers on the objects with a handler that
// does nothing, with the memory settings of dynwatch run.
func (c *child) informer(ctx context.Context, cfg *rest.Config, synced func()) error {
	memory.SetLimit(quiet, "/")
	syncing := memory.DuringSync(quiet)
	client, err := dyninformer.NewClient(cfg)
	if err != nil {
		return err
	}
	m := dyninformer.NewManager(client, func(dyninformer.Key, *event.Event) {}, dyninformer.Options{Logger: quiet})
	res := event.Resource{Group: c.v.gvr.Group, Version: c.v.gvr.Version, Resource: c.v.gvr.Resource, Kind: c.v.kind, Namespaced: true}
	m.Set([]dyninformer.Watch{{Resource: res, Namespace: c.ns}}, dyninformer.ListsKnown)
	errc := make(chan error, 1)
	go func() { errc <- m.Run(ctx) }()
	if !m.WaitForSync(ctx) {
		return <-errc
	}
	syncing()
	synced()
	return <-errc
}

// keepsNothing reports whether the process of a row keeps no object.
func keepsNothing(label string) bool {
	return strings.HasPrefix(label, "raw ") || label == floorRuns[0].label
}

// printFloors prints the CPU of each floor, and of dynwatch, as a share of
// the typed informer's: what each step up costs.
func printFloors(at string, syncs []syncResult) {
	var typed syncResult
	for _, s := range syncs {
		if s.label == "client-go typed informer (protobuf)" {
			typed = s
		}
	}
	if typed.cpu <= 0 {
		return
	}
	fmt.Printf("CPU as a share of the typed informer's%s:", at)
	sep := " "
	for _, label := range []string{"raw watch-list stream", floorRuns[0].label, floorRuns[1].label, "dynwatch"} {
		for _, s := range syncs {
			if s.label == label {
				fmt.Printf("%s%s %.2f", sep, label, float64(s.cpu)/float64(typed.cpu))
				sep = "; "
			}
		}
	}
	fmt.Print(".\n\n")
}
