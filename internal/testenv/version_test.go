package testenv

import (
	"os"
	"regexp"
	"testing"

	"k8s.io/client-go/kubernetes"
)

// The API server reports the version it was built from, as a released one
// does (so that `kubectl version` and a chart's kubeVersion see it): the
// k8s.io/kubernetes version hack/testenv builds, not v0.0.0-master.
func TestAPIServerReportsItsVersion(t *testing.T) {
	mod, err := os.ReadFile("../../hack/testenv/go.mod")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^\s*k8s\.io/kubernetes (v\S+)`).FindSubmatch(mod)
	if m == nil {
		t.Fatal("hack/testenv/go.mod requires no k8s.io/kubernetes version")
	}
	env, err := Start(Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer env.Stop()
	v, err := kubernetes.NewForConfigOrDie(env.Config).Discovery().ServerVersion()
	if err != nil {
		t.Fatal(err)
	}
	if v.GitVersion != string(m[1]) {
		t.Errorf("GET /version: gitVersion %q (major %q, minor %q), want %s, the version hack/testenv builds: run make testenv again (rm -r .testenv first) to build a stamped kube-apiserver", v.GitVersion, v.Major, v.Minor, m[1])
	}
}
