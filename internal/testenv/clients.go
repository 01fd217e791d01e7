package testenv

import (
	"net/http"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// UserConfig returns a rest config that authenticates with token.
func (e *Env) UserConfig(token string) *rest.Config {
	return &rest.Config{
		Host:            e.URL,
		BearerToken:     token,
		TLSClientConfig: rest.TLSClientConfig{CAData: e.caData},
		QPS:             200,
		Burst:           400,
	}
}

// WriteKubeconfig writes a kubeconfig for the user with token to path.
func (e *Env) WriteKubeconfig(path, token string) error {
	return e.WriteKubeconfigAs(path, token, "")
}

// WriteKubeconfigAs writes a kubeconfig for the user with token, impersonating
// as (e.g. system:serviceaccount:NS:NAME) when it is not empty.
func (e *Env) WriteKubeconfigAs(path, token, as string) error {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["testenv"] = &clientcmdapi.Cluster{Server: e.URL, CertificateAuthorityData: e.caData}
	cfg.AuthInfos["user"] = &clientcmdapi.AuthInfo{Token: token, Impersonate: as}
	cfg.Contexts["testenv"] = &clientcmdapi.Context{Cluster: "testenv", AuthInfo: "user", Namespace: "default"}
	cfg.CurrentContext = "testenv"
	return clientcmd.WriteToFile(*cfg, path)
}

// RoundTripFunc is an http.RoundTripper made of a function, for tests that
// wrap a client's transport (rest.Config.Wrap) to see or change its requests.
type RoundTripFunc func(*http.Request) (*http.Response, error)

// RoundTrip calls f.
func (f RoundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
