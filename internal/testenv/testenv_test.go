package testenv

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

func TestStartStop(t *testing.T) {
	env, err := Start(Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer env.Stop()
	cs := kubernetes.NewForConfigOrDie(env.Config)
	ns, err := cs.CoreV1().Namespaces().Get(context.Background(), "default", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if ns.Name != "default" {
		t.Fatalf("got namespace %q", ns.Name)
	}
}
