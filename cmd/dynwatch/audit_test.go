package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"

	"github.com/dynwatch/dynwatch/audit"
	dwdiscovery "github.com/dynwatch/dynwatch/discovery"
	"github.com/dynwatch/dynwatch/dyninformer"
	"github.com/dynwatch/dynwatch/event"
	"github.com/dynwatch/dynwatch/plan"
)

type rtFunc func(*http.Request) (*http.Response, error)

func (f rtFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func TestAudit(t *testing.T) {
	d, ns := setupTail(t)
	// Objects of earlier tests may exist in other namespaces; these 300 are ours.
	for i := range 300 {
		if _, err := d.Resource(gadgetGVR).Namespace(ns).Create(t.Context(), gadget(ns, fmt.Sprintf("g%03d", i), map[string]any{"n": int64(i)}), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	t.Run("pagination", func(t *testing.T) {
		var lists atomic.Int64
		cfg := rest.CopyConfig(cp.Config)
		cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
			return rtFunc(func(r *http.Request) (*http.Response, error) {
				if r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/gadgets") {
					if r.URL.Query().Get("limit") != "50" {
						t.Errorf("LIST without limit=50: %s", r.URL)
					}
					lists.Add(1)
				}
				return rt.RoundTrip(r)
			})
		})
		file, err := plan.Load("testdata/audit.yaml")
		if err != nil {
			t.Fatal(err)
		}
		cat, err := dwdiscovery.Load(discovery.NewDiscoveryClientForConfigOrDie(cp.Config))
		if err != nil {
			t.Fatal(err)
		}
		client, err := dyninformer.NewClient(cfg)
		if err != nil {
			t.Fatal(err)
		}
		res, err := audit.Run(t.Context(), audit.Options{File: file, Catalog: cat, Client: client, PageSize: 50})
		if err != nil {
			t.Fatal(err)
		}
		listed := res.Listed["gadgets.v1.tail.example.com"]
		if listed < 300 || lists.Load() < int64((listed+49)/50) {
			t.Errorf("listed %d objects in %d requests; want every object, 50 a page", listed, lists.Load())
		}
		if lists.Load() != int64((listed+49)/50) && lists.Load() != int64((listed+49)/50)+1 {
			t.Errorf("%d LIST requests for %d objects: the resource was listed more than once", lists.Load(), listed)
		}
	})

	code, stdout, stderr := runCLI(t, "audit", "--config", "testdata/audit.yaml", "--kubeconfig", cp.Kubeconfig, "--chunk-size", "40")
	if code != exitFailure {
		t.Errorf("matches: exit %d, want 1; stderr %s", code, stderr)
	}
	if strings.Contains(stderr, "listing") {
		t.Errorf("progress lines on a non-terminal stderr: %q", stderr)
	}
	var ours []string
	for _, line := range strings.Split(stdout, "\n") {
		if strings.Contains(line, ns) {
			ours = append(ours, strings.Join(strings.Fields(line), " "))
		}
	}
	want := []string{}
	for i := 295; i < 300; i++ {
		want = append(want, fmt.Sprintf("big-gadgets gadgets.tail.example.com %s g%03d Current n=%d", ns, i, i))
	}
	// Each match shows its health: a gadget has no conditions, so Current.
	want = append(want, "odd-big-gadgets gadgets.tail.example.com "+ns+" g297 Current", "odd-big-gadgets gadgets.tail.example.com "+ns+" g299 Current")
	if strings.Join(ours, "\n") != strings.Join(want, "\n") {
		t.Errorf("table rows:\n%s\nwant:\n%s\nfull output:\n%s", strings.Join(ours, "\n"), strings.Join(want, "\n"), stdout)
	}
	if !strings.HasPrefix(strings.Join(strings.Fields(stdout), " "), "RULE RESOURCE NAMESPACE NAME HEALTH FIELDS") {
		t.Errorf("header: %s", stdout)
	}

	code, stdout, _ = runCLI(t, "audit", "--config", "testdata/audit.yaml", "--kubeconfig", cp.Kubeconfig, "-o", "json")
	n := 0
	for _, line := range strings.Split(strings.TrimSpace(stdout), "\n") {
		var p event.Payload
		if err := json.Unmarshal([]byte(line), &p); err != nil {
			t.Fatalf("not a payload: %s", line)
		}
		if p.Namespace == ns {
			n++
			if p.Type != audit.TypeAudit || p.Object == nil {
				t.Errorf("payload %+v", p)
			}
		}
	}
	if code != exitFailure || n != 7 {
		t.Errorf("json: exit %d, %d findings in our namespace, want 1 and 7", code, n)
	}

	// On a terminal (script(1) gives the real binary one), a progress line shows
	// objects listed per resource.
	tty, err := exec.Command("script", "-qec", fmt.Sprintf("%s audit --config testdata/audit.yaml --kubeconfig %s --chunk-size 50", bin, cp.Kubeconfig), "/dev/null").CombinedOutput()
	if err != nil && exitCode(err) != exitFailure {
		t.Fatalf("audit under script: %v\n%s", err, tty)
	}
	if !strings.Contains(string(tty), "listing gadgets.v1.tail.example.com: 50 objects") || !strings.Contains(string(tty), "\r\033[K") {
		t.Errorf("no progress line on a terminal:\n%q", tty)
	}

	code, stdout, stderr = runCLI(t, "audit", "--config", "testdata/audit-none.yaml", "--kubeconfig", cp.Kubeconfig)
	if code != exitOK || stdout != "" || !strings.Contains(stderr, "no rule matched") {
		t.Errorf("no matches: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	code, _, stderr = runCLI(t, "audit", "--config", "../../plan/testdata/invalid-values.yaml", "--kubeconfig", cp.Kubeconfig)
	if code != exitUsage || !strings.Contains(stderr, "6 problem(s)") {
		t.Errorf("bad config: exit %d, stderr %q", code, stderr)
	}
}

func TestTestCommand(t *testing.T) {
	tests := []struct {
		name     string
		args     []string
		code     int
		contains []string
		absent   []string
	}{
		{"scale from running fires", []string{"--old", "testdata/deploy-old.yaml", "--new", "testdata/deploy-new.json", "--explain"}, exitOK, []string{
			"on [update]", "found update: holds",
			"namespaces [prod]", `found "prod": holds`,
			"when[0] spec.replicas gt 5", "found 7: holds",
			"when[1] status.phase (old object) eq Running", `found "Running": holds`,
			"changed [spec.replicas]", "found spec.replicas: 3 -> 7: holds",
			"rule scaled-from-running fires on this update; payload:",
			`"id": "u-1:11:update"`, `"replicas": 7`, `"spec.replicas"`, `"oldObject"`,
		}, nil},
		{"a relabel does not fire", []string{"--old", "testdata/deploy-old.yaml", "--new", "testdata/deploy-relabel.yaml", "--explain"}, exitFailure, []string{
			"when[0] spec.replicas gt 5", "found 3: does NOT hold",
			"found no value at these paths changed: does NOT hold",
			"rule scaled-from-running does not fire on this update",
		}, []string{"payload"}},
		{"an add has no old object", []string{"--new", "testdata/deploy-new.json", "--explain"}, exitFailure, []string{
			"found add: does NOT hold",
			"found nothing (no old object: only updates have one): does NOT hold",
			"found not an update: changed does not apply: holds",
		}, nil},
		{"without explain", []string{"--old", "testdata/deploy-old.yaml", "--new", "testdata/deploy-new.json"}, exitOK, []string{"fires on this update"}, []string{"when[0]"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := append([]string{"test", "--config", "testdata/rules-test.yaml", "--rule", "scaled-from-running"}, tt.args...)
			code, stdout, stderr := runCLI(t, args...)
			if code != tt.code {
				t.Errorf("exit %d, want %d; stderr %s", code, tt.code, stderr)
			}
			flat := strings.Join(strings.Fields(stdout), " ")
			for _, c := range tt.contains {
				if !strings.Contains(flat, strings.Join(strings.Fields(c), " ")) {
					t.Errorf("output lacks %q:\n%s", c, stdout)
				}
			}
			for _, a := range tt.absent {
				if strings.Contains(stdout, a) {
					t.Errorf("output has %q:\n%s", a, stdout)
				}
			}
		})
	}
	code, _, stderr := runCLI(t, "test", "--config", "testdata/rules-test.yaml", "--rule", "nope", "--new", "testdata/deploy-new.json")
	if code != exitUsage || !strings.Contains(stderr, `no rule "nope" in testdata/rules-test.yaml (it has: scaled-from-running)`) {
		t.Errorf("unknown rule: exit %d, %s", code, stderr)
	}
}
