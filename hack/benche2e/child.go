package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"github.com/dynwatch/dynwatch/internal/memory"
	"io"
	"log/slog"
	"os"
	"runtime"
	"runtime/metrics"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/tidwall/gjson"

	"github.com/dynwatch/dynwatch/daemon"
	"github.com/dynwatch/dynwatch/dyninformer"
	"github.com/dynwatch/dynwatch/plan"
)

// A child is one measured process. It reports to the parent on stdout:
//
//	SYNCED <ns>   its initial list is done, ns after it began
//	RECV <bytes>  response bytes received from the API server until then
//	HEAP <bytes>  live heap after a GC, less what it held before it began
//	LAT <ns>      one update seen, ns after the parent wrote it
//	CPU <ns>      its CPU time so far, on the parent's "CPU" line on stdin
//	RSS <bytes>   its peak RSS (VmHWM), as it exits
//	STAT <goroutines> <bytes>  on "STAT": goroutines and live heap (after a GC)
//	REQSEND <discovery>  dynwatch, as it stops: discovery requests by then
//	REQS <discovery> <resources> <goroutines>  dynwatch, after HEAP: discovery
//	              requests so far, resources listed or watched, goroutines
//
// and exits when its stdin closes.
type child struct {
	mode, kubeconfig, ns, state string
	profile                     string // a directory for CPU and heap profiles
	v                           variant
	// shardCount and shardIndex make a dynwatch child one shard (shards.go).
	shardCount, shardIndex int
	recv                   *recvCounter

	mu  sync.Mutex
	out io.Writer
	// reqs counts dynwatch's requests (nil in other modes).
	reqs *requestCounter
}

func (c *child) say(format string, args ...any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	fmt.Fprintf(c.out, format+"\n", args...)
}

// latencyAnnotation carries the time the parent wrote an update (Unix ns).
const latencyAnnotation = "bench-written"

func (c *child) latency(written string) {
	if t, err := strconv.ParseInt(written, 10, 64); err == nil {
		c.say("LAT %d", time.Now().UnixNano()-t)
	}
}

func liveHeap() uint64 {
	runtime.GC()
	runtime.GC()
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func runChild(c *child) error {
	c.out = os.Stdout
	cfg, err := clientcmd.BuildConfigFromFlags("", c.kubeconfig)
	if err != nil {
		return err
	}
	cfg.QPS, cfg.Burst = -1, 0 // no client-side throttling in any mode
	c.recv = countReceived(cfg)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if c.profile != "" {
		stop, err := profile(c.profile + "/" + c.mode + c.suffix())
		if err != nil {
			return err
		}
		defer stop()
	}
	base := liveHeap()
	start := time.Now()
	synced := func() {
		c.say("SYNCED %d", time.Since(start).Nanoseconds())
		c.say("RECV %d", c.recv.n.Load())
		h := liveHeap()
		c.say("HEAP %d", int64(h)-int64(base))
		if c.profile != "" {
			writeHeap(c.profile + "/" + c.mode + c.suffix() + ".heap")
			writeProfile("goroutine", c.profile+"/"+c.mode+c.suffix()+".goroutine")
		}
		if c.reqs != nil {
			disc, res := c.reqs.counts()
			c.say("REQS %d %d %d", disc, res, runtime.NumGoroutine())
		}
	}
	run := map[string]func(context.Context, *rest.Config, func()) error{
		"list": c.list, "watchlist": c.watchList, "dynamic": c.dynamicInformer, "typed": c.typedInformer, "rawwatch": c.rawWatch, "dynwatch": c.dynwatch,
		"decode": c.decode, "informer": c.informer,
		"dynwatch-gogc100": func(ctx context.Context, cfg *rest.Config, synced func()) error {
			os.Setenv("GOGC", "100") // the runtime's pace during the sync too (see memory.DuringSync)
			return c.dynwatch(ctx, cfg, synced)
		},
		"dynwatch-nogzip": func(ctx context.Context, cfg *rest.Config, synced func()) error {
			cfg.DisableCompression = true // what gunzip costs, on loopback
			return c.dynwatch(ctx, cfg, synced)
		},
	}[c.mode]
	if run == nil {
		return fmt.Errorf("unknown mode %q", c.mode)
	}
	errc := make(chan error, 1)
	go func() { errc <- run(ctx, cfg, synced) }()
	go func() {
		sc := bufio.NewScanner(os.Stdin)
		for sc.Scan() {
			switch sc.Text() {
			case "CPU":
				c.say("CPU %d", cpuTime().Nanoseconds())
			case "STAT":
				h := liveHeap()
				c.say("STAT %d %d", runtime.NumGoroutine(), h)
			}
		}
		cancel()
	}()
	err = <-errc
	if c.reqs != nil {
		disc, _ := c.reqs.counts()
		c.say("REQSEND %d", disc)
	}
	// Its own peak RSS: the rusage's counts the parent's memory at the fork.
	c.say("RSS %d", peakRSS("self"))
	return err
}

// peakRSS is the high-water mark of a process's resident memory (VmHWM, of
// the memory it has had since its exec), in bytes; 0 if it cannot be read.
func peakRSS(pid string) int64 { return statusKB(pid, "VmHWM:") * 1024 }

// statusKB is one kB figure of /proc/PID/status; 0 if it cannot be read.
func statusKB(pid, field string) int64 {
	b, err := os.ReadFile("/proc/" + pid + "/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, field); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb
		}
	}
	return 0
}

// list reads every page of the objects as bytes, as a client that decodes
// nothing would.
func (c *child) list(ctx context.Context, cfg *rest.Config, synced func()) error {
	if err := eachPage(ctx, cfg, c.v, c.ns, func([]byte) {}); err != nil {
		return err
	}
	synced()
	<-ctx.Done()
	return nil
}

// watchList reads the initial list as a stream of watch events, as client-go
// asks for it by default, as bytes: the floor of a streaming initial sync.
func (c *child) watchList(ctx context.Context, cfg *rest.Config, synced func()) error {
	client, err := rest.RESTClientFor(restConfigFor(cfg))
	if err != nil {
		return err
	}
	body, err := client.Get().AbsPath(apiPath(c.v, c.ns)...).Param("watch", "true").Param("sendInitialEvents", "true").
		Param("resourceVersionMatch", "NotOlderThan").Param("allowWatchBookmarks", "true").Stream(ctx)
	if err != nil {
		return err
	}
	defer body.Close()
	r := bufio.NewReaderSize(body, 1<<20)
	for {
		line, err := r.ReadSlice('\n')
		if err == bufio.ErrBufferFull {
			continue // a long frame: its end comes with the next read
		}
		if err != nil {
			return err
		}
		if bytes.Contains(line, []byte(`"k8s.io/initial-events-end":"true"`)) {
			break
		}
	}
	synced()
	<-ctx.Done()
	return nil
}

// dynamicInformer is a plain client-go dynamic shared informer: JSON decoded
// into unstructured maps, kept whole.
func (c *child) dynamicInformer(ctx context.Context, cfg *rest.Config, synced func()) error {
	d, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return err
	}
	f := dynamicinformer.NewFilteredDynamicSharedInformerFactory(d, 0, c.ns, nil)
	inf := f.ForResource(c.v.gvr).Informer()
	_, _ = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		UpdateFunc: func(_, obj any) {
			c.latency(obj.(*unstructured.Unstructured).GetAnnotations()[latencyAnnotation])
		},
	})
	return runInformer(ctx, f, inf.HasSynced, synced)
}

// factory is what both client-go informer factories have.
type factory interface {
	Start(stop <-chan struct{})
	Shutdown()
}

// runInformer starts f, reports when hasSynced, and runs until ctx is done.
func runInformer(ctx context.Context, f factory, hasSynced cache.InformerSynced, synced func()) error {
	f.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), hasSynced) {
		return ctx.Err()
	}
	synced()
	<-ctx.Done()
	f.Shutdown()
	return nil
}

// typedInformer is what a watcher built for one kind does (kubewatch): a
// clientset shared informer that speaks protobuf. Deployments and ConfigMaps.
func (c *child) typedInformer(ctx context.Context, cfg *rest.Config, synced func()) error {
	pc := rest.CopyConfig(cfg)
	pc.ContentType = "application/vnd.kubernetes.protobuf"
	pc.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
	cs, err := kubernetes.NewForConfig(pc)
	if err != nil {
		return err
	}
	f := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithNamespace(c.ns))
	inf := f.Apps().V1().Deployments().Informer()
	if c.v.name == "configmaps" {
		inf = f.Core().V1().ConfigMaps().Informer()
	}
	_, _ = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{UpdateFunc: func(_, obj any) {
		if m, err := meta.Accessor(obj); err == nil {
			c.latency(m.GetAnnotations()[latencyAnnotation])
		}
	}})
	return runInformer(ctx, f, inf.HasSynced, synced)
}

// rawWatch is the floor of event latency: one watch, each event decoded once.
func (c *child) rawWatch(ctx context.Context, cfg *rest.Config, synced func()) error {
	d, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return err
	}
	ri := d.Resource(c.v.gvr).Namespace(c.ns)
	l, err := ri.List(ctx, metav1.ListOptions{Limit: 1})
	if err != nil {
		return err
	}
	w, err := ri.Watch(ctx, metav1.ListOptions{ResourceVersion: l.GetResourceVersion()})
	if err != nil {
		return err
	}
	defer w.Stop()
	synced()
	for ev := range w.ResultChan() {
		if u, ok := ev.Object.(*unstructured.Unstructured); ok && ev.Type == watch.Modified {
			c.latency(u.GetAnnotations()[latencyAnnotation])
		}
	}
	return nil
}

// dynwatch runs what `dynwatch run` runs, with one rule on the objects and a
// log action whose output is read for latencies.
func (c *child) dynwatch(ctx context.Context, cfg *rest.Config, synced func()) error {
	memory.SetLimit(quiet, "/") // as run does
	config := "apiVersion: dynwatch/v1alpha1\n"
	if c.state != "" {
		config += fmt.Sprintf("state: {path: %s}\n", c.state)
	}
	sel := fmt.Sprintf("{group: %q, resource: %s}", c.v.gvr.Group, c.v.gvr.Resource)
	if c.v.name == manyCRDs.name {
		sel = `{resource: "*"}` // every resource: the built-in ones and the many definitions
	}
	if c.shardCount > 0 {
		config += fmt.Sprintf("shards: {count: %d, index: %d}\n", c.shardCount, c.shardIndex)
	}
	config += fmt.Sprintf("actions: [{name: out, log: {}}]\nrules: [{name: bench, resources: [%s], namespaces: [%s], actions: [out]}]\n", sel, c.ns)
	file, err := plan.Parse("bench.yaml", []byte(config))
	if err != nil {
		return err
	}
	c.reqs = &requestCounter{resources: map[string]bool{}}
	cfg = rest.CopyConfig(cfg)
	cfg.Wrap(c.reqs.wrap)
	raw, err := dyninformer.NewClient(cfg)
	if err != nil {
		return err
	}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	var once sync.Once
	log := slog.New(&syncHandler{Handler: slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}),
		synced: func() { once.Do(func() { go synced() }) }})
	return daemon.Run(ctx, daemon.Options{File: file, Informers: raw, Discovery: kube.Discovery(), Kube: kube,
		Logger: log, Stdout: &lineWriter{line: func(b []byte) {
			c.latency(gjson.GetBytes(b, "object.metadata.annotations."+latencyAnnotation).Str)
		}}})
}

// syncHandler tells when the watcher logs that its informers synced.
type syncHandler struct {
	slog.Handler
	synced func()
}

// Enabled: the records the inner handler writes, and INFO, where the synced
// message is; DEBUG records are not built, as in dynwatch run.
func (h *syncHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= slog.LevelInfo || h.Handler.Enabled(ctx, l)
}

func (h *syncHandler) Handle(ctx context.Context, r slog.Record) error {
	if r.Message == "all informers synced" {
		h.synced()
	}
	if !h.Handler.Enabled(ctx, r.Level) {
		return nil
	}
	return h.Handler.Handle(ctx, r)
}

func (h *syncHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return &syncHandler{Handler: h.Handler.WithAttrs(as), synced: h.synced}
}

func (h *syncHandler) WithGroup(name string) slog.Handler {
	return &syncHandler{Handler: h.Handler.WithGroup(name), synced: h.synced}
}

// lineWriter calls line with every complete line written to it.
type lineWriter struct {
	buf  []byte
	line func([]byte)
}

func (w *lineWriter) Write(p []byte) (int, error) {
	w.buf = append(w.buf, p...)
	for {
		i := bytes.IndexByte(w.buf, '\n')
		if i < 0 {
			return len(p), nil
		}
		w.line(w.buf[:i])
		w.buf = w.buf[i+1:]
	}
}

// restConfigFor is cfg for reading bytes: no decoding is asked of it.
func restConfigFor(cfg *rest.Config) *rest.Config {
	c := rest.CopyConfig(cfg)
	c.GroupVersion = &schema.GroupVersion{}
	c.APIPath = "/"
	c.NegotiatedSerializer = scheme.Codecs.WithoutConversion()
	return c
}

func apiPath(v variant, ns string) []string {
	p := []string{"api", v.gvr.Version}
	if v.gvr.Group != "" {
		p = []string{"apis", v.gvr.Group, v.gvr.Version}
	}
	return append(p, "namespaces", ns, v.gvr.Resource)
}

// suffix ends the names of the child's profiles: each run of a mode keeps
// its own (the process id tells them apart); pprof merges the runs when
// given their files together (go tool pprof -top DIR/dynwatch.*.cpu).
func (c *child) suffix() string {
	s := ""
	if c.state != "" {
		s = "-state"
	}
	return s + "." + strconv.Itoa(os.Getpid())
}

// profile writes a CPU profile of the process to path.cpu until stop.
func profile(path string) (stop func(), err error) {
	f, err := os.Create(path + ".cpu")
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		return nil, err
	}
	return func() { pprof.StopCPUProfile(); _ = f.Close() }, nil
}

// writeProfile writes the named runtime profile to path.
func writeProfile(name, path string) {
	f, err := os.Create(path)
	if err != nil {
		return
	}
	defer f.Close()
	_ = pprof.Lookup(name).WriteTo(f, 0)
}

func writeHeap(path string) {
	f, err := os.Create(path)
	if err != nil {
		return
	}
	defer f.Close()
	_ = pprof.Lookup("heap").WriteTo(f, 0)
}
