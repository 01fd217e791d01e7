package charttest

import (
	"strings"
	"testing"

	"k8s.io/client-go/dynamic"
)

// A release whose full name is as long as a name may be (63 characters,
// the chart truncates it there) still installs: the config check's Job,
// which adds "-check", is accepted by the API server, and so is its pod.
func TestLongFullnameInstalls(t *testing.T) {
	d := dynamic.NewForConfigOrDie(controlPlane(t).Config)
	ensureNamespace(t, d, namespace, nil)
	long := strings.Repeat("a", 60) + "-dw"
	for _, u := range mustRender(t, values{set: "fullnameOverride=" + long}) {
		dryRunCreate(t, d, u)
		if u.GetKind() == "Job" {
			dryRunCreate(t, d, podOf(t, u))
		}
	}
}
