package daemon

import (
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/dynwatch/dynwatch/internal/testenv"
)

// A replica that comes to lead acts on the config file as it is now, but
// not on one that brings the clusters block to a daemon started without it
// (its metrics have no cluster label, its records no cluster keys): that
// applies after a restart, and the last valid config is acted on; a file
// that changes something else is taken.
func TestClustersBlockAtANewTermAppliesAfterARestart(t *testing.T) {
	const base = `apiVersion: dynwatch/v1alpha1
actions: [{name: out, log: {}}]
rules:
  - name: cms
    resources: [{group: "", resource: configmaps}]
    actions: [out]
`
	file := loadPlan(t, base)
	logs := &testenv.Buffer{}
	d := &daemon{o: Options{File: file}, log: slog.New(slog.NewTextHandler(logs, nil)), file: file, start: time.Now()}
	if err := os.WriteFile(file.Path, []byte("clusters: [{name: east}]\n"+base), 0o600); err != nil {
		t.Fatal(err)
	}
	if got := d.config(); got != file || len(got.Config.Clusters) != 0 {
		t.Errorf("acted on a file that adds clusters: %d clusters", len(got.Config.Clusters))
	}
	if !strings.Contains(logs.String(), "applies after a restart") {
		t.Errorf("no error saying why:\n%s", logs.String())
	}
	if err := os.WriteFile(file.Path, []byte(base+"  - name: more\n    resources: [{group: \"\", resource: secrets}]\n    actions: [out]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if got := d.config(); got.Rule("more") == nil {
		t.Error("a file that changes only rules was not taken")
	}
}
