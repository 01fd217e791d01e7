package main

import (
	"testing"

	"k8s.io/client-go/rest"
)

// The CloudEvents source is the API server's URL as client-go dials it, with
// its scheme, also when the kubeconfig gives the server without one.
func TestServerURLHasAScheme(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		cfg  rest.Config
		want string
	}{
		{rest.Config{Host: "https://10.0.0.1:6443"}, "https://10.0.0.1:6443"},
		{rest.Config{Host: "10.0.0.1:6443", TLSClientConfig: rest.TLSClientConfig{CAData: []byte("x")}}, "https://10.0.0.1:6443"},
		{rest.Config{Host: "10.0.0.1:8080"}, "http://10.0.0.1:8080"},
		{rest.Config{Host: "https://k8s.example/prefix"}, "https://k8s.example/prefix"},
	} {
		if got := serverURL(&c.cfg); got != c.want {
			t.Errorf("serverURL(%q) = %q, want %q", c.cfg.Host, got, c.want)
		}
	}
}
