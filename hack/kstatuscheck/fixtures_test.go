package kstatuscheck

import (
	"bytes"
	"encoding/json"
	"os"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"
	"sigs.k8s.io/yaml"

	"github.com/dynwatch/dynwatch/event"
	"github.com/dynwatch/dynwatch/health"
)

// compare computes obj's health with kstatus and with dynwatch and fails
// the test when the statuses differ; messages that differ are logged. An
// object kstatus cannot compute (an error) must be Unknown to dynwatch,
// which is what kstatus' poller reports for it.
func compare(t *testing.T, name string, obj []byte) (kstatus, dynwatch event.Health) {
	t.Helper()
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(obj); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	res, err := status.Compute(u)
	switch {
	case err != nil:
		kstatus = event.Health{Status: health.Unknown, Message: err.Error()}
	default:
		kstatus = event.Health{Status: res.Status.String(), Message: res.Message}
	}
	c, _ := health.New(nil)
	dynwatch = c.Health(event.Resource{}, obj)
	if kstatus.Status != dynwatch.Status {
		t.Errorf("%s: kstatus %s (%q), dynwatch %s (%q)", name, kstatus.Status, kstatus.Message, dynwatch.Status, dynwatch.Message)
	} else if kstatus.Message != dynwatch.Message {
		t.Logf("%s: both %s; messages differ: kstatus %q, dynwatch %q", name, kstatus.Status, kstatus.Message, dynwatch.Message)
	}
	return kstatus, dynwatch
}

// TestFixtures compares the two on every object of testdata/fixtures.yaml.
func TestFixtures(t *testing.T) {
	data, err := os.ReadFile("testdata/fixtures.yaml")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	seen := map[string]bool{}
	for _, doc := range bytes.Split(data, []byte("\n---\n")) {
		obj, err := yaml.YAMLToJSON(doc)
		if err != nil {
			t.Fatal(err)
		}
		var meta struct {
			Metadata struct{ Name string } `json:"metadata"`
		}
		_ = json.Unmarshal(obj, &meta)
		name := meta.Metadata.Name
		if name == "" || seen[name] {
			t.Fatalf("a fixture without a name of its own: %s", doc)
		}
		seen[name] = true
		k, _ := compare(t, name, obj)
		seen[k.Status] = true
		n++
	}
	if n < 20 {
		t.Errorf("%d fixtures, want at least 20", n)
	}
	// The fixtures reach every status: a comparison that only ever saw
	// Current would prove little.
	for _, s := range health.Statuses {
		if !seen[s] {
			t.Errorf("no fixture is %s", s)
		}
	}
}
