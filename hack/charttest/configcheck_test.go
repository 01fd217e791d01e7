package charttest

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"helm.sh/helm/v3/pkg/chartutil"
	helmrelease "helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/releaseutil"
)

// checkName is the config check's Job and ConfigMap.
const checkName = release + "-check"

// imageEntrypoint is the image's entrypoint (hack/image's test pins it): a
// container without a command runs it with its args.
const imageEntrypoint = "/dynwatch"

// hooks are the rendering's hooks as Helm parses them (kind/name: hook).
func hooks(t *testing.T, v values) map[string]*helmrelease.Hook {
	t.Helper()
	files, err := renderFiles(v)
	if err != nil {
		t.Fatal(err)
	}
	for name := range files {
		if !strings.HasSuffix(name, ".yaml") {
			delete(files, name) // NOTES.txt, as helm install leaves it out
		}
	}
	hs, _, err := releaseutil.SortManifests(files, chartutil.DefaultVersionSet, releaseutil.InstallOrder)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*helmrelease.Hook{}
	for _, h := range hs {
		out[h.Kind+"/"+h.Name] = h
	}
	return out
}

// Before install and upgrade, Helm runs the config check: the hook's
// ConfigMap first (a lower weight), then the Job; both are deleted before the
// next check and once the check passes, and a failed Job's log is printed.
func TestConfigCheckIsAHook(t *testing.T) {
	hs := hooks(t, values{})
	cm, job := hs["ConfigMap/"+checkName], hs["Job/"+checkName]
	if cm == nil || job == nil {
		t.Fatalf("no config check hooks: %v", hs)
	}
	for _, h := range []*helmrelease.Hook{cm, job} {
		if !slices.Equal(h.Events, []helmrelease.HookEvent{helmrelease.HookPreInstall, helmrelease.HookPreUpgrade}) {
			t.Errorf("%s %s runs on %v, want pre-install and pre-upgrade", h.Kind, h.Name, h.Events)
		}
		if !slices.Equal(h.DeletePolicies, []helmrelease.HookDeletePolicy{helmrelease.HookBeforeHookCreation, helmrelease.HookSucceeded}) {
			t.Errorf("%s %s is deleted on %v, want before-hook-creation and hook-succeeded", h.Kind, h.Name, h.DeletePolicies)
		}
	}
	if cm.Weight >= job.Weight {
		t.Errorf("the ConfigMap's weight %d is not below the Job's %d: the Job could start without its config", cm.Weight, job.Weight)
	}
	if !slices.Contains(job.OutputLogPolicies, helmrelease.HookOutputOnFailed) {
		t.Errorf("the Job's output log policies are %v: helm would not print check's lines when it fails", job.OutputLogPolicies)
	}
	if hs := hooks(t, values{set: "configCheck.enabled=false"}); len(hs) != 0 {
		t.Errorf("configCheck.enabled=false renders hooks: %v", hs)
	}
}

// checkJob is the rendering's config check Job, typed.
func checkJob(t *testing.T, objs []*unstructured.Unstructured) batchv1.Job {
	t.Helper()
	var job batchv1.Job
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(named(t, objs, "Job", checkName).Object, &job); err != nil {
		t.Fatal(err)
	}
	return job
}

// The Job runs check once (no retry), on the config the pods get, with no
// ServiceAccount token, the pods' security context, and their env.
func TestConfigCheckJob(t *testing.T) {
	objs := mustRender(t, values{set: "env[0].name=HOOK_TOKEN,env[0].value=x"})
	job := checkJob(t, objs)
	pod := job.Spec.Template.Spec
	if job.Spec.BackoffLimit == nil || *job.Spec.BackoffLimit != 0 || pod.RestartPolicy != corev1.RestartPolicyNever {
		t.Errorf("backoffLimit %v, restartPolicy %s: want 0 and Never (a config does not get better on a retry)", job.Spec.BackoffLimit, pod.RestartPolicy)
	}
	if pod.AutomountServiceAccountToken == nil || *pod.AutomountServiceAccountToken || pod.ServiceAccountName != "" {
		t.Errorf("automountServiceAccountToken %v, serviceAccountName %q: check reads only the file", pod.AutomountServiceAccountToken, pod.ServiceAccountName)
	}
	w := podTemplate(t, workload(t, objs)).Spec
	if !jsonEqual(pod.SecurityContext, w.SecurityContext) || !jsonEqual(pod.Containers[0].SecurityContext, w.Containers[0].SecurityContext) {
		t.Errorf("the Job's security context differs from the pods':\n%s %s\n%s %s", asJSON(pod.SecurityContext), asJSON(pod.Containers[0].SecurityContext), asJSON(w.SecurityContext), asJSON(w.Containers[0].SecurityContext))
	}
	if c := pod.Containers[0]; len(c.Env) != 1 || c.Env[0].Name != "HOOK_TOKEN" || c.Image != w.Containers[0].Image || len(c.Command) != 0 {
		t.Errorf("the check's container: env %v, image %s, command %v: want the pods' env (less POD_NAME) and image, and the image's entrypoint", c.Env, c.Image, c.Command)
	}
	if got, want := configOf(t, named(t, objs, "ConfigMap", checkName)), renderedConfig(t, objs); got != want {
		t.Errorf("the check's config is not the pods':\n%s\nthe pods':\n%s", got, want)
	}
}

var (
	binOnce sync.Once
	binPath string
	binErr  error
)

// dynwatchBinary builds cmd/dynwatch once, as the image holds it.
func dynwatchBinary(t *testing.T) string {
	t.Helper()
	binOnce.Do(func() {
		dir, err := os.MkdirTemp("", "charttest-bin")
		if err != nil {
			binErr = err
			return
		}
		binPath = filepath.Join(dir, "dynwatch")
		out, err := exec.Command("go", "build", "-C", filepath.Join("..", ".."), "-o", binPath, "./cmd/dynwatch").CombinedOutput()
		if err != nil {
			binErr = errors.New(string(out))
		}
	})
	if binErr != nil {
		t.Fatalf("build dynwatch: %v", binErr)
	}
	return binPath
}

// runCheckJob runs what the Job's container runs, with the real binary as
// the image's entrypoint: each configMap volume's files written under a
// temporary root at its mountPath, the container's args with the mount
// paths moved under that root, and its env's values. It returns the root,
// the exit code, stdout and stderr.
func runCheckJob(t *testing.T, objs []*unstructured.Unstructured) (root string, code int, stdout, stderr string) {
	t.Helper()
	job := checkJob(t, objs)
	pod := job.Spec.Template.Spec
	c := pod.Containers[0]
	if len(c.Command) != 0 {
		t.Fatalf("the container has a command %v, not the image's entrypoint", c.Command)
	}
	root = t.TempDir()
	var mounts []string
	for _, m := range c.VolumeMounts {
		i := slices.IndexFunc(pod.Volumes, func(v corev1.Volume) bool { return v.Name == m.Name })
		if i < 0 || pod.Volumes[i].ConfigMap == nil {
			t.Fatalf("mount %s: no configMap volume", m.Name)
		}
		cm := named(t, objs, "ConfigMap", pod.Volumes[i].ConfigMap.Name)
		data, _, _ := unstructured.NestedStringMap(cm.Object, "data")
		for k, v := range data {
			p := filepath.Join(root, m.MountPath, k)
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, []byte(v), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		mounts = append(mounts, m.MountPath)
	}
	args := slices.Clone(c.Args)
	for i, a := range args {
		for _, m := range mounts {
			if strings.HasPrefix(a, m+"/") {
				args[i] = filepath.Join(root, a)
			}
		}
	}
	cmd := exec.Command(dynwatchBinary(t), args...)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + root}
	for _, e := range c.Env {
		if e.ValueFrom == nil {
			cmd.Env = append(cmd.Env, e.Name+"="+e.Value)
		}
	}
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatal(err)
	}
	return root, cmd.ProcessState.ExitCode(), out.String(), errOut.String()
}

// lineOf is the 1-based line of text that contains s, or 0.
func lineOf(text, s string) int {
	for i, l := range strings.Split(text, "\n") {
		if strings.Contains(l, s) {
			return i + 1
		}
	}
	return 0
}

// The check's container, run as the Job would run it: on a config check
// rejects it exits 2 with check's own message (the mounted file, the line,
// the field path); a ${VAR} the pods' env does not set fails it too, as it
// would fail run; on every config the chart promises to install, it passes.
func TestConfigCheckRunsCheck(t *testing.T) {
	const cfg = "apiVersion: dynwatch/v1alpha1\nactions: [{name: out, log: {}}]\nrules:\n  - name: cms\n    resources: [{group: \"\", resource: configmaps}]\n    when:\n      - path: data.mode\n        op: %s\n        value: \"off\"\n    actions: [out]\n"
	bad := values{file: "config: " + quoteYAML(strings.Replace(cfg, "%s", "bigger", 1))}
	objs := mustRender(t, bad)
	root, code, _, stderr := runCheckJob(t, objs)
	line := lineOf(renderedConfig(t, objs), "op: bigger")
	want := filepath.Join(root, "/etc/dynwatch/config.yaml") + ":" + strconv.Itoa(line) + ": rules[0].when[0].op:"
	if code != 2 || line == 0 || !strings.Contains(stderr, want) {
		t.Errorf("a bad op: exit %d, stderr:\n%s\nwant exit 2 and %q", code, stderr, want)
	}

	env := "apiVersion: dynwatch/v1alpha1\nactions: [{name: hook, webhook: {url: \"https://hooks.example.com/${HOOK_PATH}\"}}]\nrules: [{name: cms, resources: [{group: \"\", resource: configmaps}], actions: [hook]}]\n"
	objs = mustRender(t, values{file: "config: " + quoteYAML(env)})
	root, code, _, stderr = runCheckJob(t, objs)
	if want := filepath.Join(root, "/etc/dynwatch/config.yaml") + ":"; code != 2 || !strings.Contains(stderr, want) || !strings.Contains(stderr, "HOOK_PATH is not set") {
		t.Errorf("an unset ${HOOK_PATH}: exit %d, stderr:\n%s\nwant exit 2 naming %s and the variable", code, stderr, want)
	}
	if _, code, _, stderr = runCheckJob(t, mustRender(t, values{file: "config: " + quoteYAML(env), set: "env[0].name=HOOK_PATH,env[0].value=x"})); code != 0 {
		t.Errorf("${HOOK_PATH} set in env: exit %d, stderr:\n%s", code, stderr)
	}

	good := []values{{file: "config: " + quoteYAML(strings.Replace(cfg, "%s", "eq", 1))}}
	good = append(good, rbacRenderings...)
	for _, r := range renderings {
		good = append(good, r.values)
	}
	for _, v := range good {
		t.Run(v.String(), func(t *testing.T) {
			_, code, stdout, stderr := runCheckJob(t, mustRender(t, v))
			if code != 0 || !strings.Contains(stdout, "/etc/dynwatch/config.yaml: ok:") {
				t.Errorf("exit %d, stdout %q, stderr:\n%s", code, stdout, stderr)
			}
		})
	}
}

func asJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func jsonEqual(a, b any) bool { return asJSON(a) == asJSON(b) }
