package main

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"

	"github.com/dynwatch/dynwatch/internal/testenv"
)

// closedPortKubeconfig writes a kubeconfig whose server is a loopback port
// nothing listens on (it was open a moment ago, then closed).
func closedPortKubeconfig(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "kubeconfig")
	kc := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters: [{name: gone, cluster: {server: "http://%s"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: gone, context: {cluster: gone, user: u}}]
current-context: gone
`, addr)
	if err := os.WriteFile(path, []byte(kc), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// audit's exit codes, from the binary: an API server it cannot reach and a
// resource it may not list make the audit incomplete (3), never "matched"
// (1); what matched is printed, and then matching decides (1).
func TestAuditExitCodes(t *testing.T) {
	grantConfigMaps(t)
	ns := testenv.Namespace(t, dynamic.NewForConfigOrDie(cp.Config))
	cm := &unstructured.Unstructured{Object: testenv.ConfigMap(ns, "seen", map[string]any{"k": "v"})}
	if _, err := dynamic.NewForConfigOrDie(cp.Config).Resource(cmResource).Namespace(ns).Create(t.Context(), cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	rulesFor := func(when string) string {
		return writeConfig(t, t.TempDir(), fmt.Sprintf(`apiVersion: dynwatch/v1alpha1
actions: [{name: out, log: {}}]
rules:
  - {name: cms, resources: [{group: "", resource: configmaps}], namespaces: [%s], %s actions: [out]}
  - {name: secrets, resources: [{group: "", resource: secrets}], namespaces: [%[1]s], actions: [out]}
`, ns, when))
	}
	nothing := rulesFor("when: [{path: data.nothing-has-this, op: exists}],")
	matches := rulesFor("")

	code, stdout, stderr := runBin(t, "audit", "--config", matches, "--kubeconfig", closedPortKubeconfig(t))
	if code != exitIncomplete || stdout != "" || !strings.Contains(stderr, "cannot reach the API server") || !strings.Contains(stderr, "the audit is incomplete (exit 3)") {
		t.Errorf("unreachable API server: exit %d, want 3; stdout %q\nstderr:\n%s", code, stdout, stderr)
	}

	cmOnly := cmOnlyKubeconfig(t)
	code, stdout, stderr = runBin(t, "audit", "--config", nothing, "--kubeconfig", cmOnly)
	if code != exitIncomplete || stdout != "" || !strings.Contains(stderr, "cannot list secrets.v1 in namespace "+ns) {
		t.Errorf("secrets forbidden, nothing matched: exit %d, want 3; stdout %q\nstderr:\n%s", code, stdout, stderr)
	}
	code, stdout, stderr = runBin(t, "audit", "--config", matches, "--kubeconfig", cmOnly)
	if code != exitFailure || !strings.Contains(stdout, "cms") || !strings.Contains(stdout, "seen") ||
		!strings.Contains(stderr, "cannot list secrets.v1") || !strings.Contains(stderr, "the audit is incomplete too") {
		t.Errorf("secrets forbidden, a ConfigMap matched: exit %d, want 1 and the match printed; stdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	code, _, stderr = runBin(t, "audit", "--config", nothing, "--kubeconfig", cp.Kubeconfig)
	if code != exitOK {
		t.Errorf("everything listed, nothing matched: exit %d, want 0\n%s", code, stderr)
	}
}
