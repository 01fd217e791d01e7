package payload

import (
	"slices"
	"strings"
	"testing"
)

func TestChangedPaths(t *testing.T) {
	old := `{"metadata":{"resourceVersion":"1","labels":{"a":"1"},"managedFields":[{"x":1}]},
	         "spec":{"replicas":1,"template":{"containers":[{"image":"a"},{"image":"b"}]},"gone":{"x":1,"y":[]}}}`
	new := `{"metadata":{"resourceVersion":"2","labels":{"a":"1","b.c":"2"},"managedFields":[{"x":2}]},
	         "spec":{"replicas":3,"template":{"containers":[{"image":"a"},{"image":"c"},{"image":"d"}]}}}`
	got := ChangedPaths([]byte(old), []byte(new))
	want := []string{
		`metadata.labels.b\.c`,
		"spec.gone.x",
		"spec.gone.y",
		"spec.replicas",
		"spec.template.containers.1.image",
		"spec.template.containers.2.image",
	}
	if !slices.Equal(got, want) {
		t.Errorf("ChangedPaths:\n got %s\nwant %s", strings.Join(got, " "), strings.Join(want, " "))
	}
	if got := ChangedPaths([]byte(old), []byte(old)); len(got) != 0 {
		t.Errorf("no change: got %v", got)
	}
}
