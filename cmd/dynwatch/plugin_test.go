package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/yaml"

	"github.com/dynwatch/dynwatch/internal/testenv"
)

func TestNameFor(t *testing.T) {
	t.Parallel()
	for argv0, want := range map[string]string{
		"dynwatch": "dynwatch", "/usr/local/bin/dynwatch": "dynwatch", "/home/u/.krew/bin/kubectl-dynwatch": "kubectl dynwatch",
		`C:\krew\bin\kubectl-dynwatch.exe`: "dynwatch", "kubectl-dynwatch.exe": "kubectl dynwatch", "kubectl-dynwatch-old": "dynwatch",
	} {
		if got := nameFor(argv0); got != want {
			t.Errorf("nameFor(%q) = %q, want %q", argv0, got, want)
		}
	}
}

// kubectlPlugin is the built binary installed as kubectl installs a plugin:
// kubectl-dynwatch on the PATH, here a symbolic link.
func kubectlPlugin(t *testing.T) string {
	t.Helper()
	link := filepath.Join(t.TempDir(), "kubectl-dynwatch")
	if err := os.Symlink(bin, link); err != nil {
		t.Fatal(err)
	}
	return link
}

// Run as kubectl-dynwatch, dynwatch's help and usage name it `kubectl dynwatch`.
func TestKubectlPluginHelp(t *testing.T) {
	t.Parallel()
	plugin := kubectlPlugin(t)
	out, err := exec.Command(plugin, "--help").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "  kubectl dynwatch [command]") || strings.Contains(string(out), "\n  dynwatch [") {
		t.Errorf("--help: %v\n%s", err, out)
	}
	out, err = exec.Command(plugin, "tail", "--help").CombinedOutput()
	if err != nil || !strings.HasPrefix(string(out), "Usage: kubectl dynwatch tail ") {
		t.Errorf("tail --help: %v\n%s", err, out)
	}
	out, err = exec.Command(plugin, "tail", "--no-such-flag").CombinedOutput()
	if err == nil || !strings.Contains(string(out), "Run 'kubectl dynwatch tail --help' for usage.") {
		t.Errorf("tail --no-such-flag: %v\n%s", err, out)
	}
	if out, err := exec.Command(bin, "--help").CombinedOutput(); err != nil || strings.Contains(string(out), "kubectl") {
		t.Errorf("as dynwatch, --help: %v\n%s", err, out)
	}
}

// kubectl dynwatch takes kubectl's --kubeconfig, --context and -n, before
// the command (cobra passes the flags before a command on to it) as after it:
// the context chosen is the one used (the current one is refused), and -n the
// namespace followed.
func TestKubectlPluginKubeFlags(t *testing.T) {
	t.Parallel()
	cs := kubernetes.NewForConfigOrDie(cp.Config)
	ns := "plugin-" + strings.ReplaceAll(time.Now().Format("150405.000000"), ".", "")
	for _, n := range []string{ns, ns + "-other"} {
		if _, err := cs.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: n}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := cs.CoreV1().ConfigMaps(n).Create(t.Context(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm-in-" + n}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	kc := twoContexts(t)
	plugin := kubectlPlugin(t)
	// The current context's token is refused: only --context testenv can list.
	if out, err := exec.Command(plugin, "--kubeconfig", kc, "-n", ns, "tail", "configmaps").CombinedOutput(); err == nil {
		t.Fatalf("with the current context (a refused token), tail succeeded:\n%s", out)
	}
	for _, args := range [][]string{
		{"--kubeconfig", kc, "--context", "testenv", "-n", ns, "tail", "configmaps", "--initial"},
		{"tail", "configmaps", "--initial", "--kubeconfig=" + kc, "--context=testenv", "-n", ns},
	} {
		var out, errOut testenv.Buffer
		cmd := exec.Command(plugin, args...)
		cmd.Stdout, cmd.Stderr = &out, &errOut
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		testenv.WaitFor(t, "the namespace's ConfigMap", 30*time.Second, func() bool {
			return strings.Contains(out.String(), "cm-in-"+ns) || cmd.ProcessState != nil
		})
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if !strings.Contains(out.String(), "cm-in-"+ns) || strings.Contains(out.String(), "cm-in-"+ns+"-other") {
			t.Errorf("%v: stdout\n%s\nstderr\n%s", args, out.String(), errOut.String())
		}
	}
}

// twoContexts writes a kubeconfig whose current context ("elsewhere") has a
// token the API server refuses, and whose context "testenv" is the admin's.
func twoContexts(t *testing.T) string {
	t.Helper()
	cfg, err := clientcmd.LoadFromFile(cp.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	cur := cfg.Contexts[cfg.CurrentContext]
	bad := cfg.AuthInfos[cur.AuthInfo].DeepCopy()
	bad.Token = "refused-token"
	cfg.AuthInfos["refused"] = bad
	elsewhere := cur.DeepCopy()
	elsewhere.AuthInfo = "refused"
	cfg.Contexts["elsewhere"] = elsewhere
	cfg.Contexts["testenv"] = cur.DeepCopy()
	cfg.CurrentContext = "elsewhere"
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// The krew manifest template, filled in as krew-release-bot fills it in, is a
// krew Plugin for linux and darwin, amd64 and arm64, each running the binary
// under the plugin's name from its release archive.
func TestKrewManifest(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile("../../deploy/krew/dynwatch.yaml")
	if err != nil {
		t.Fatal(err)
	}
	addURI := regexp.MustCompile(`\{\{\s*addURIAndSha "([^"]+)" \.TagName\s*\}\}`)
	s := addURI.ReplaceAllString(string(raw), "uri: $1\n    sha256: 0000")
	s = regexp.MustCompile(`\{\{\s*\.TagName\s*\}\}`).ReplaceAllString(s, "v1.2.3")
	if strings.Contains(s, "{{") {
		t.Fatalf("a placeholder krew-release-bot does not fill in is left:\n%s", s)
	}
	var m struct {
		APIVersion, Kind string
		Metadata         struct{ Name string }
		Spec             struct {
			Version, Homepage, ShortDescription, Description string
			Platforms                                        []struct {
				Selector         struct{ MatchLabels map[string]string }
				URI, Sha256, Bin string
			}
		}
	}
	if err := yaml.UnmarshalStrict([]byte(s), &m); err != nil {
		t.Fatalf("%v\n%s", err, s)
	}
	if m.Kind != "Plugin" || m.APIVersion != "krew.googlecontainertools.github.com/v1alpha2" || m.Metadata.Name != "dynwatch" || m.Spec.Version != "v1.2.3" {
		t.Errorf("manifest: %+v", m)
	}
	seen := map[string]bool{}
	for _, p := range m.Spec.Platforms {
		os, arch := p.Selector.MatchLabels["os"], p.Selector.MatchLabels["arch"]
		seen[os+"/"+arch] = true
		if p.Bin != "kubectl-dynwatch" || !strings.HasSuffix(p.URI, "/v1.2.3/kubectl-dynwatch_v1.2.3_"+os+"_"+arch+".tar.gz") || p.Sha256 == "" {
			t.Errorf("%s/%s: bin %q, uri %q", os, arch, p.Bin, p.URI)
		}
	}
	for _, want := range []string{"linux/amd64", "linux/arm64", "darwin/amd64", "darwin/arm64"} {
		if !seen[want] || len(seen) != 4 {
			t.Errorf("platforms %v, want linux and darwin, amd64 and arm64", seen)
			break
		}
	}
}
