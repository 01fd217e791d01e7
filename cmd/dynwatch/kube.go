package main

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"

	"k8s.io/client-go/discovery"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	dwdiscovery "github.com/dynwatch/dynwatch/discovery"
	"github.com/dynwatch/dynwatch/dyninformer"
)

// restConfig loads the client config the way kubectl does: --kubeconfig, then
// $KUBECONFIG, then ~/.kube/config, then the in-cluster service account.
func (k *kubeFlags) restConfig() (*rest.Config, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = k.kubeconfig
	overrides := &clientcmd.ConfigOverrides{CurrentContext: k.context}
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, overrides).ClientConfig()
	if clientcmd.IsEmptyConfig(err) {
		// client-go's own words point to KUBERNETES_MASTER, which dynwatch does not read.
		return nil, noCluster(rules)
	}
	if err != nil {
		return nil, fmt.Errorf("load kubeconfig: %w (set --kubeconfig or KUBECONFIG, or run in a cluster)", err)
	}
	cfg.UserAgent = "dynwatch/" + version
	if k.log != nil {
		cfg.WarningHandler = &onceWarnings{log: k.log, seen: map[string]bool{}}
	}
	if cfg.QPS == 0 {
		cfg.QPS, cfg.Burst = 50, 100
	}
	return cfg, nil
}

// noCluster says that no kubeconfig names a cluster, and how to point
// dynwatch at one.
func noCluster(rules *clientcmd.ClientConfigLoadingRules) error {
	var found []string
	for _, p := range rules.GetLoadingPrecedence() {
		if _, err := os.Stat(p); err == nil {
			found = append(found, p)
		}
	}
	if env := os.Getenv(clientcmd.RecommendedConfigPathEnvVar); len(found) == 0 && env != "" && rules.ExplicitPath == "" {
		// client-go reads the files KUBECONFIG names and no other.
		return fmt.Errorf("no cluster to talk to: KUBECONFIG names %s, which does not exist (with KUBECONFIG set, ~/.kube/config is not read); "+
			"set KUBECONFIG to the file kubectl uses, or give --kubeconfig FILE", strings.Join(rules.GetLoadingPrecedence(), ", "))
	}
	if len(found) == 0 {
		return errors.New("no cluster to talk to: no kubeconfig found (--kubeconfig, $KUBECONFIG, ~/.kube/config) and not running in a pod; " +
			"give --kubeconfig FILE or set KUBECONFIG to the file kubectl uses")
	}
	return fmt.Errorf("no cluster to talk to: %s has no current context; give --context NAME or run kubectl config use-context NAME",
		strings.Join(found, ", "))
}

// defaultNamespace is the kubeconfig context's namespace, as kubectl uses it.
func (k *kubeFlags) defaultNamespace() string {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = k.kubeconfig
	ns, _, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: k.context}).Namespace()
	if err != nil || ns == "" {
		return "default"
	}
	return ns
}

// conn holds the clients of one cluster.
type conn struct {
	raw   *dyninformer.Client // what informers list and watch with
	disc  discovery.DiscoveryInterface
	typed kubernetes.Interface
	host  string // the API server's URL
}

// connect builds every client a command may need.
func (k *kubeFlags) connect() (*conn, error) {
	cfg, err := k.restConfig()
	if err != nil {
		return nil, err
	}
	c := &conn{host: serverURL(cfg)}
	if c.raw, err = dyninformer.NewClient(cfg); err != nil {
		return nil, err
	}
	if c.typed, err = kubernetes.NewForConfig(cfg); err != nil {
		return nil, err
	}
	c.disc = c.typed.Discovery()
	return c, nil
}

// serverURL is the API server's URL as client-go dials it: a kubeconfig
// server given without a scheme ("10.0.0.1:6443") gets the one client-go
// uses, so the CloudEvents source is always a URI.
func serverURL(cfg *rest.Config) string {
	u, _, err := rest.DefaultServerUrlFor(cfg)
	if err != nil {
		return cfg.Host
	}
	return u.String()
}

// catalog reads discovery, warning on stderr about group versions that failed.
func (c *conn) catalog(stderr io.Writer) (*dwdiscovery.Catalog, error) {
	cat, err := dwdiscovery.Load(c.disc)
	if err != nil {
		return nil, err
	}
	for gv, gerr := range cat.Failed {
		fmt.Fprintf(stderr, "dynwatch: warning: discovery failed for %s, its resources are left out: %v\n", gv, gerr)
	}
	return cat, nil
}

// onceWarnings logs each distinct API server warning (a deprecated API, say)
// once at WARN, and again only at DEBUG: every list and watch of a deprecated
// version repeats it.
type onceWarnings struct {
	log  *slog.Logger
	mu   sync.Mutex
	seen map[string]bool
}

func (w *onceWarnings) HandleWarningHeader(code int, _ string, text string) {
	if code != 299 || text == "" {
		return
	}
	w.mu.Lock()
	first := !w.seen[text]
	w.seen[text] = true
	w.mu.Unlock()
	if first {
		w.log.Warn("API server warning (said once; repeats are at debug level)", "warning", text)
		return
	}
	w.log.Debug("API server warning", "warning", text)
}
