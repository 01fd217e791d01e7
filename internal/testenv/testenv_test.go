package testenv

import (
	"context"
	"net"
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

// A port picked free and taken by another process before the binary binds it
// (here the API server's) makes Start try again on new ports, not fail.
func TestStartRetriesWhenAPortIsTaken(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	picks := 0
	env, err := Start(Options{ports: func(n int) ([]int, error) {
		picks++
		ports, err := freePorts(n)
		if picks == 1 && err == nil {
			ports[2] = taken.Addr().(*net.TCPAddr).Port
		}
		return ports, err
	}})
	if err != nil {
		t.Fatalf("Start with the API server's port taken: %v", err)
	}
	defer env.Stop()
	if picks != 2 {
		t.Errorf("ports picked %d times, want 2 (the first set had a port taken)", picks)
	}
	if env.URL == "https://"+taken.Addr().String() {
		t.Errorf("the API server's URL is the taken port's")
	}
	if _, err := kubernetes.NewForConfigOrDie(env.Config).CoreV1().Namespaces().Get(context.Background(), "default", metav1.GetOptions{}); err != nil {
		t.Fatal(err)
	}
}
