package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/dynwatch/dynwatch/internal/testenv"
)

// runBin runs the real binary and returns its exit code, stdout and stderr; a
// command still running after 15s is killed and the test fails.
func runBin(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 15*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("%v still running after 15s; stderr:\n%s", args, errOut.String())
	}
	if err != nil && cmd.ProcessState == nil {
		t.Fatal(err)
	}
	return cmd.ProcessState.ExitCode(), out.String(), errOut.String()
}

// An unknown name among several is a usage error, as with kubectl get, unless
// --ignore-unknown: then a warning, and the others are followed.
func TestTailUnknownResource(t *testing.T) {
	code, stdout, stderr := runBin(t, "tail", "cm,deploymnets", "--kubeconfig", cp.Kubeconfig)
	if code != exitUsage || !strings.Contains(stderr, `unknown resource "deploymnets" (did you mean deployments`) || stdout != "" {
		t.Errorf("exit %d, want 2 and did you mean; stdout %q, stderr:\n%s", code, stdout, stderr)
	}
	if !strings.Contains(stderr, "--ignore-unknown") {
		t.Errorf("the error does not name --ignore-unknown:\n%s", stderr)
	}
	_, ns := setupTail(t)
	out, errOut, stop := background(t, "tail", "-v", "cm,deploymnets", "--ignore-unknown", "-n", ns, "--kubeconfig", cp.Kubeconfig)
	waitOutput(t, errOut, "the informers to list", func(s string) bool { return strings.Contains(s, "msg=following") })
	if code := stop(); code != exitOK {
		t.Errorf("--ignore-unknown: exit %d: %s", code, errOut.String())
	}
	if s := errOut.String(); !strings.Contains(s, `warning: unknown resource "deploymnets"`) || !strings.Contains(s, "resources=configmaps") {
		t.Errorf("--ignore-unknown: stderr:\n%s", s)
	}
	if !strings.HasPrefix(out.String(), "TIME") {
		t.Errorf("--ignore-unknown: stdout %q", out.String())
	}
}

// Without -n or -A, tail says which namespace it follows and how to follow
// all; with -n it does not.
func TestTailSaysDefaultNamespace(t *testing.T) {
	t.Parallel()
	_, defaulted, stopDefaulted := background(t, "tail", "-v", "cm", "--kubeconfig", cp.Kubeconfig)
	_, explicit, stopExplicit := background(t, "tail", "-v", "cm", "-n", "kube-system", "--kubeconfig", cp.Kubeconfig)
	waitOutput(t, defaulted, "the informers to list", func(s string) bool { return strings.Contains(s, "msg=following") })
	waitOutput(t, explicit, "the informers to list", func(s string) bool { return strings.Contains(s, "msg=following") })
	stopDefaulted()
	stopExplicit()
	if s := defaulted.String(); !strings.Contains(s, `following namespace "default" (the kubeconfig context's); -n NS for another, -A for all namespaces`) {
		t.Errorf("without -n, no note of the namespace:\n%s", s)
	}
	if s := explicit.String(); strings.Contains(s, "-A for all") {
		t.Errorf("with -n, a note of the namespace:\n%s", s)
	}
}

// Every command takes -v and --log-level and uses them (a bad level is a usage
// error); at the root -v is not --version.
func TestVerbosityOnEveryCommand(t *testing.T) {
	t.Parallel()
	args := map[string][]string{
		"run": {"--config", "x.yaml"}, "check": {"--config", "x.yaml"}, "audit": {"--config", "x.yaml"},
		"rbac": {"--config", "x.yaml"}, "tail": {"cm"}, "test": {"--config", "x.yaml", "--rule", "r", "--new", "o.yaml"},
	}
	for _, c := range commands() {
		t.Run(c.name, func(t *testing.T) {
			if code, stdout, stderr := runCLI(t, c.name, "-v", "--log-level", "debug", "--help"); code != exitOK || !strings.Contains(stdout, "--log-level") {
				t.Errorf("-v --log-level debug --help: exit %d, stderr %q", code, stderr)
			}
			a := append([]string{c.name, "--log-level", "loud"}, args[c.name]...)
			if code, _, stderr := runCLI(t, a...); code != exitUsage || !strings.Contains(stderr, `--log-level: want debug, info, warn or error, got "loud"`) {
				t.Errorf("%v: exit %d, stderr:\n%s", a, code, stderr)
			}
		})
	}
	code, stdout, stderr := runCLI(t, "-v")
	if code != exitUsage || stdout != "" || !strings.Contains(stderr, "the version is --version") {
		t.Errorf("dynwatch -v: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
}

// check reports an unset ${VAR} as a warning and exits 0, leaving the field
// that holds it unjudged; --strict-env (and run) make it an error.
func TestCheckUnsetEnv(t *testing.T) {
	t.Parallel()
	cfg := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(cfg, []byte(`apiVersion: dynwatch/v1alpha1
actions:
  - name: hook
    webhook:
      url: ${DYNWATCH_TEST_UNSET_URL}
      headers: {Authorization: "Bearer ${DYNWATCH_TEST_UNSET_TOKEN}"}
rules: [{name: cms, resources: [{group: "", resource: configmaps}], actions: [hook]}]
`), 0o600); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := runBin(t, "check", "--config", cfg)
	if code != exitOK || !strings.Contains(stdout, "ok: 1 rule(s), 1 action(s)") {
		t.Errorf("check: exit %d, stdout %q, stderr:\n%s", code, stdout, stderr)
	}
	for _, want := range []string{
		cfg + ":5: actions[0].webhook.url: warning: environment variable DYNWATCH_TEST_UNSET_URL is not set",
		cfg + ":6: actions[0].webhook.headers.Authorization: warning: environment variable DYNWATCH_TEST_UNSET_TOKEN is not set",
	} {
		if !strings.Contains(stderr, want) {
			t.Errorf("check: stderr lacks %q:\n%s", want, stderr)
		}
	}
	if strings.Contains(stderr, "required") || strings.Contains(stderr, "want an absolute") {
		t.Errorf("check judged the unset URL:\n%s", stderr)
	}
	code, _, stderr = runBin(t, "check", "--strict-env", "--config", cfg)
	if code != exitUsage || !strings.Contains(stderr, "webhook.url: environment variable DYNWATCH_TEST_UNSET_URL is not set") {
		t.Errorf("check --strict-env: exit %d, stderr:\n%s", code, stderr)
	}
}

// A reload logs what it changed: rules, actions and watches added and removed.
func TestRunReloadLogsChanges(t *testing.T) {
	t.Parallel()
	_, ns := setupTail(t)
	cfg := filepath.Join(t.TempDir(), "config.yaml")
	write := func(s string) {
		t.Helper()
		if err := os.WriteFile(cfg, []byte("apiVersion: dynwatch/v1alpha1\n"+s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(fmt.Sprintf(`actions: [{name: out, log: {}}, {name: old, log: {}}]
rules: [{name: cms, resources: [{group: "", resource: configmaps}], namespaces: [%s], actions: [out, old]}]
`, ns))
	cmd := exec.Command(bin, "run", "--config", cfg, "--kubeconfig", cp.Kubeconfig, "--config-check-interval", "100ms")
	stderr := &testenv.Buffer{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	waitOutput(t, stderr, "dynwatch to watch", func(s string) bool { return strings.Contains(s, "all informers synced") })
	write(fmt.Sprintf(`actions: [{name: out, log: {}}, {name: new, log: {}}]
rules:
  - {name: cms, resources: [{group: "", resource: configmaps}], namespaces: [%[1]s], actions: [out, new]}
  - {name: gadgets, resources: [{group: tail.example.com, resource: gadgets}], namespaces: [%[1]s], actions: [out]}
`, ns))
	s := waitOutput(t, stderr, "the reload", func(s string) bool { return strings.Contains(s, `msg="config reloaded"`) })
	var line string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, `msg="config reloaded"`) {
			line = l
		}
	}
	for _, want := range []string{"rulesAdded=gadgets", "actionsAdded=new", "actionsRemoved=old",
		`watchesAdded="gadgets.v1.tail.example.com in namespace ` + ns + `"`} {
		if !strings.Contains(line, want) {
			t.Errorf("the reload's log line lacks %s:\n%s", want, line)
		}
	}
	if strings.Contains(line, "watchesRemoved") || strings.Contains(line, "rulesRemoved") {
		t.Errorf("the reload's log line names a removal that did not happen:\n%s", line)
	}
}

// After the initial list, tail warns once about a --where path that no listed
// object has and a --where-cel expression that never yielded true or false;
// filters that some object can satisfy are not named.
func TestTailWarnsFilterMissedEverywhere(t *testing.T) {
	t.Parallel()
	d, ns := setupTail(t)
	for _, name := range []string{"one", "two"} {
		if _, err := d.Resource(gadgetGVR).Namespace(ns).Create(t.Context(), gadget(ns, name, map[string]any{"size": int64(4)}), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	_, stderr, stop := background(t, "tail", "gadgets", "-n", ns, "--kubeconfig", cp.Kubeconfig,
		"--where", "spec.nothere > 3", "--where", "spec.size > 1", "--where", "!spec.paused",
		"--where-cel", "object.spec.missing == 1", "--where-cel", "object.spec.size > 1")
	waitOutput(t, stderr, "the warnings", func(s string) bool { return strings.Count(s, "level=WARN") >= 2 })
	if code := stop(); code != exitOK {
		t.Errorf("exit %d", code)
	}
	s := stderr.String()
	for _, want := range []string{
		`msg="--where path is missing on every object listed: nothing can match it until one has it" path=spec.nothere objects=2`,
		`msg="--where-cel yielded no true or false on any object listed (an error, such as a missing key, counts as false): nothing can match it" expr="object.spec.missing == 1" objects=2`,
	} {
		if strings.Count(s, want) != 1 {
			t.Errorf("stderr does not say once %s:\n%s", want, s)
		}
	}
	if n := strings.Count(s, "level=WARN"); n != 2 {
		t.Errorf("%d warnings, want the two filters that nothing matches:\n%s", n, s)
	}
}

// The first tail example of what to try against `make demo` (docs/development.md)
// works on the objects the demo makes: its filter names a path ConfigMaps have
// (tail would warn otherwise), and the demo's change of the ConfigMap shows up.
func TestDemoFirstTailExample(t *testing.T) {
	t.Parallel()
	readme, err := os.ReadFile("../../docs/development.md")
	if err != nil {
		t.Fatal(err)
	}
	var example string
	for _, l := range strings.Split(string(readme), "\n") {
		if strings.HasPrefix(l, "bin/dynwatch tail ") {
			example = l
			break
		}
	}
	args := shellWords(t, strings.TrimPrefix(example, "bin/dynwatch "))
	if len(args) < 2 || !slices.Contains(strings.Split(args[1], ","), "cm") {
		t.Fatalf("the demo's first tail example does not follow ConfigMaps: %q", example)
	}
	d, ns := setupTail(t)
	cms := d.Resource(schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}).Namespace(ns)
	// The demo's ConfigMap, as hack/demo creates it.
	cm := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "settings", "labels": map[string]any{"demo": "true"}}, "data": map[string]any{"mode": "on"}}}
	if _, err := cms.Create(t.Context(), cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for i, a := range args {
		switch a {
		case "demo":
			args[i] = ns
		case "KUBECONFIG":
			args[i] = cp.Kubeconfig
		}
	}
	out, stderr, stop := background(t, append(args, "-v")...)
	waitOutput(t, stderr, "the informers to list", func(s string) bool { return strings.Contains(s, "msg=following") })
	if err := unstructured.SetNestedField(cm.Object, "off", "data", "mode"); err != nil {
		t.Fatal(err)
	}
	cm.SetResourceVersion("")
	if _, err := cms.Update(t.Context(), cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitOutput(t, out, "the demo's change", func(s string) bool { return strings.Contains(s, " settings ") })
	stop()
	if s := stderr.String(); strings.Contains(s, "level=WARN") {
		t.Errorf("the demo's example %q warns:\n%s", example, s)
	}
}

// shellWords splits a command line as sh would, for single-quoted words only.
func shellWords(t *testing.T, s string) []string {
	t.Helper()
	var out []string
	for s = strings.TrimSpace(s); s != ""; s = strings.TrimSpace(s) {
		if s[0] == '\'' {
			end := strings.IndexByte(s[1:], '\'')
			if end < 0 {
				t.Fatalf("unclosed quote in %q", s)
			}
			out, s = append(out, s[1:end+1]), s[end+2:]
			continue
		}
		w, rest, _ := strings.Cut(s, " ")
		out, s = append(out, w), rest
	}
	return out
}

// check --cluster asks the API server whether leader election may get, create
// and update its Lease, and fails until a Role allows it.
func TestCheckClusterLease(t *testing.T) {
	grantConfigMaps(t)
	_, ns := setupTail(t)
	cfg := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf(`apiVersion: dynwatch/v1alpha1
leaderElection: {namespace: %s, name: dw-lease}
actions: [{name: out, log: {}}]
rules: [{name: cms, resources: [{group: "", resource: configmaps}], actions: [out]}]
`, ns)), 0o600); err != nil {
		t.Fatal(err)
	}
	kubeconfig := cmOnlyKubeconfig(t)
	code, stdout, stderr := runBin(t, "check", "--cluster", "--config", cfg, "--kubeconfig", kubeconfig)
	want := "leases.v1.coordination.k8s.io " + ns + "/dw-lease: get DENIED"
	if code != exitFailure || !strings.Contains(stdout, want) || !strings.Contains(stdout, "create DENIED") || !strings.Contains(stdout, "update DENIED") {
		t.Errorf("without a Lease role: exit %d, want 1 and %q; stdout:\n%s\nstderr:\n%s", code, want, stdout, stderr)
	}
	d := dynamic.NewForConfigOrDie(cp.Config)
	rbacGVR := func(r string) schema.GroupVersionResource {
		return schema.GroupVersionResource{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: r}
	}
	role := map[string]any{"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": map[string]any{"name": "lease"},
		"rules": []any{
			map[string]any{"apiGroups": []any{"coordination.k8s.io"}, "resources": []any{"leases"}, "resourceNames": []any{"dw-lease"}, "verbs": []any{"get", "update"}},
			map[string]any{"apiGroups": []any{"coordination.k8s.io"}, "resources": []any{"leases"}, "verbs": []any{"create"}},
		}}
	binding := map[string]any{"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": map[string]any{"name": "lease"},
		"roleRef":  map[string]any{"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "lease"},
		"subjects": []any{map[string]any{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": cmOnlyUser}}}
	for r, o := range map[string]map[string]any{"roles": role, "rolebindings": binding} {
		if _, err := d.Resource(rbacGVR(r)).Namespace(ns).Create(t.Context(), &unstructured.Unstructured{Object: o}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	code, stdout, stderr = runBin(t, "check", "--cluster", "--config", cfg, "--kubeconfig", kubeconfig)
	want = "leases.v1.coordination.k8s.io " + ns + "/dw-lease: get allowed, create allowed, update allowed"
	if code != exitOK || !strings.Contains(stdout, want) {
		t.Errorf("with a Lease role: exit %d, want 0 and %q; stdout:\n%s\nstderr:\n%s", code, want, stdout, stderr)
	}
}

// kubectl's ways to name one object, TYPE NAME and TYPE/NAME, and
// --field-selector, filter tail's events.
func TestTailObjectAndFieldSelector(t *testing.T) {
	t.Parallel()
	d, ns := setupTail(t)
	streams := map[string][]string{
		"TYPE NAME":        {"tail", "-v", "gadgets", "one", "-n", ns, "--kubeconfig", cp.Kubeconfig, "-o", "name", "--watch-only"},
		"TYPE/NAME":        {"tail", "-v", "gd/two", "-n", ns, "--kubeconfig", cp.Kubeconfig, "-o", "name", "--watch-only"},
		"--field-selector": {"tail", "-v", "gadgets", "--field-selector", "metadata.name!=one,spec.tier=gold", "-n", ns, "--kubeconfig", cp.Kubeconfig, "-o", "name", "--watch-only"},
	}
	want := map[string]string{"TYPE NAME": "gadget.tail.example.com/one\n", "TYPE/NAME": "gadget.tail.example.com/two\n", "--field-selector": "gadget.tail.example.com/two\n"}
	outs, stops := map[string]*testenv.Buffer{}, map[string]func() int{}
	for name, args := range streams {
		out, stderr, stop := background(t, args...)
		waitOutput(t, stderr, name+" to list", func(s string) bool { return strings.Contains(s, "msg=following") })
		outs[name], stops[name] = out, stop
	}
	// three, created last, matches none: once each stream has printed its
	// object, a short wait shows that nothing else follows.
	for _, name := range []string{"one", "two", "three"} {
		tier := map[string]string{"one": "gold", "two": "gold", "three": "silver"}[name]
		if _, err := d.Resource(gadgetGVR).Namespace(ns).Create(t.Context(), gadget(ns, name, map[string]any{"tier": tier}), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for name, out := range outs {
		waitOutput(t, out, name+"'s object", func(s string) bool { return strings.Contains(s, want[name]) })
	}
	time.Sleep(500 * time.Millisecond)
	for name, out := range outs {
		stops[name]()
		if s := out.String(); s != want[name] {
			t.Errorf("%s: got %q, want %q", name, s, want[name])
		}
	}
	if code, _, stderr := runCLI(t, "tail", "gadgets", "--field-selector", "metadata.name", "--kubeconfig", cp.Kubeconfig); code != exitUsage || !strings.Contains(stderr, "--field-selector") {
		t.Errorf("bad --field-selector: exit %d, %s", code, stderr)
	}
}

// resources takes kubectl api-resources' -o wide, yaml and name.
func TestResourcesOutputs(t *testing.T) {
	t.Parallel()
	code, stdout, stderr := runCLI(t, "resources", "-o", "name", "--kubeconfig", cp.Kubeconfig, "--group", "apps")
	if code != exitOK || !strings.Contains(stdout, "deployments.apps\n") || strings.Count(stdout, "deployments.apps\n") != 1 {
		t.Errorf("-o name: exit %d, stdout:\n%s\nstderr: %s", code, stdout, stderr)
	}
	code, stdout, _ = runCLI(t, "resources", "-o", "yaml", "--kubeconfig", cp.Kubeconfig, "--group", "core")
	if code != exitOK || !strings.Contains(stdout, "- categories:") || !strings.Contains(stdout, "resource: configmaps") {
		t.Errorf("-o yaml: exit %d, stdout:\n%s", code, stdout)
	}
	code, stdout, _ = runCLI(t, "resources", "-o", "wide", "--kubeconfig", cp.Kubeconfig, "--group", "core")
	if lines := strings.Split(stdout, "\n"); code != exitOK || !strings.HasSuffix(strings.TrimSpace(lines[0]), "CATEGORIES") || !strings.Contains(stdout, "all") {
		t.Errorf("-o wide: exit %d, stdout:\n%s", code, stdout)
	}
}

// Completion knows -n namespaces (from the cluster), -o values and test's
// --rule names (from its --config).
func TestCompleteFlagValues(t *testing.T) {
	t.Parallel()
	_, ns := setupTail(t)
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"__complete", "tail", "--kubeconfig", cp.Kubeconfig, "-n", ns}, []string{ns}},
		{[]string{"__complete", "tail", "-o", ""}, []string{"table", "wide", "json", "yaml", "name"}},
		{[]string{"__complete", "resources", "-o", "y"}, []string{"yaml"}},
		{[]string{"__complete", "audit", "--output", ""}, []string{"table", "json"}},
		{[]string{"__complete", "test", "--config", "../../config.example.yaml", "--rule", ""}, []string{"big-widgets", "configmap-mode"}},
	} {
		code, stdout, stderr := runCLI(t, tc.args...)
		lines := strings.Split(strings.TrimSpace(stdout), "\n")
		if got := lines[:len(lines)-1]; code != exitOK || strings.Join(got, " ") != strings.Join(tc.want, " ") {
			t.Errorf("%v: exit %d, got %q, want %q; stderr %s", tc.args[1:], code, got, tc.want, stderr)
		}
	}
}
