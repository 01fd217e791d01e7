package main

import (
	"context"
	"fmt"
	"sync"

	flag "github.com/spf13/pflag"

	"github.com/dynwatch/dynwatch/config"
	"github.com/dynwatch/dynwatch/plan"
	"github.com/dynwatch/dynwatch/tail"
)

// clusterFlags are tail's flags for the clusters of a config file.
type clusterFlags struct {
	config, name string
}

func (f *clusterFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.config, "config", "", "a config file: its redact list applies, and --cluster names its clusters")
	fs.StringVar(&f.name, "cluster", "", "follow the named cluster of --config's clusters, or all of them (\"all\"), with a CLUSTER column")
}

// load loads --config, when given (nil without it).
func (f *clusterFlags) load(e *env) (*plan.File, error) {
	if f.config == "" {
		return nil, nil
	}
	file, code := loadConfig(e.stderr, f.config)
	if file == nil {
		return nil, fmt.Errorf("--config %s: invalid (exit %d)", f.config, code)
	}
	return file, nil
}

// specs returns the clusters --cluster names, from the config file.
func (f *clusterFlags) specs(file *plan.File) ([]config.ClusterSpec, error) {
	if file == nil {
		return nil, fmt.Errorf("--cluster needs --config FILE, whose clusters it names")
	}
	if f.name == "all" {
		if len(file.Config.Clusters) == 0 {
			return nil, fmt.Errorf("--config %s defines no clusters", f.config)
		}
		return file.Config.Clusters, nil
	}
	for _, c := range file.Config.Clusters {
		if c.Name == f.name {
			return []config.ClusterSpec{c}, nil
		}
	}
	return nil, fmt.Errorf("--cluster %s: no such cluster in %s (want one of %v, or all)", f.name, f.config, file.Config.ClusterNames())
}

// tailClusters is tail of one or every cluster of a config: the resources
// resolved through each cluster's discovery, one table (with a CLUSTER
// column) or one stream of payloads (each with its cluster) for all.
func tailClusters(ctx context.Context, e *env, kf *kubeFlags, tf *tailFlags, file *plan.File, resources string, opts tail.Options, usageErr func(string, ...any) int) int {
	specs, err := tf.clusters.specs(file)
	if err != nil {
		return usageErr("%v", err)
	}
	if !tf.all && opts.Namespace == "" {
		opts.Namespace = kf.defaultNamespace()
	}
	opts.ClusterColumn = true
	p := tail.NewPrinter(opts)
	opts.Printer = p
	type one struct {
		run  func(context.Context) error
		name string
	}
	var tails []one
	for _, spec := range specs {
		c, err := kf.forCluster(spec).connect()
		if err == nil {
			o := opts
			o.Cluster = spec.Name
			cat, cerr := c.catalog(e.stderr)
			if err = cerr; err == nil {
				if err := findResources(e, cat, resources, &o, tf.ns != "", tf.ignoreUnknown); err != nil {
					return usageErr("cluster %s: %v", spec.Name, err)
				}
				client := c.raw
				tails = append(tails, one{name: spec.Name, run: func(ctx context.Context) error { return tail.Run(ctx, client, o) }})
			}
		}
		if err != nil {
			fmt.Fprintf(e.stderr, "dynwatch tail: cluster %s: %v\n", spec.Name, err)
			return exitFailure
		}
	}
	if opts.Initial {
		for range tails {
			p.Hold() // each tail releases it once listed: the table is sized to every cluster's list
		}
	}
	if err := p.Header(); err != nil {
		return exitFailure
	}
	ctx, _, stop := signalContext(ctx, e)
	defer stop()
	failed := false
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, t := range tails {
		wg.Go(func() {
			if err := t.run(ctx); err != nil {
				mu.Lock()
				failed = true
				mu.Unlock()
				fmt.Fprintf(e.stderr, "dynwatch tail: cluster %s: %v\n", t.name, err)
			}
		})
	}
	wg.Wait()
	if failed {
		return exitFailure
	}
	return exitOK
}
