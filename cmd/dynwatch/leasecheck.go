package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	authzv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	authzclient "k8s.io/client-go/kubernetes/typed/authorization/v1"

	"github.com/dynwatch/dynwatch/config"
)

// leaseVerbs are what leader election does with its Lease: reads it, creates
// it when it is missing, and updates it to acquire and renew.
var leaseVerbs = []string{"get", "create", "update"}

// checkLease asks the API server (SelfSubjectAccessReview) whether dynwatch
// may get, create and update the Lease leader election uses, and prints the
// verdicts; it returns a problem line per Lease where one is denied. create is asked without the name:
// RBAC cannot limit create to a resource name. With shards, each shard's
// Lease (name-INDEX) is asked about.
func checkLease(ctx context.Context, w io.Writer, ssar authzclient.SelfSubjectAccessReviewsGetter, le *config.LeaderElection, shards *config.Shards) (problems []string, err error) {
	names := []string{le.Name}
	if shards != nil {
		names = names[:0]
		for i := range shards.Count {
			names = append(names, fmt.Sprintf("%s-%d", le.Name, i))
		}
	}
	fmt.Fprintln(w, "leaderElection:")
	for _, name := range names {
		line, ok, err := checkOneLease(ctx, ssar, le.Namespace, name)
		if err != nil {
			return nil, err
		}
		fmt.Fprintf(w, "  %s\n", line)
		if !ok {
			problems = append(problems, "leaderElection: "+line)
		}
	}
	return problems, nil
}

// checkOneLease asks about one Lease and says the verdicts in one line.
func checkOneLease(ctx context.Context, ssar authzclient.SelfSubjectAccessReviewsGetter, namespace, name string) (line string, ok bool, err error) {
	ok = true
	var verdicts []string
	for _, verb := range leaseVerbs {
		attrs := &authzv1.ResourceAttributes{Verb: verb, Group: "coordination.k8s.io", Version: "v1", Resource: "leases", Namespace: namespace, Name: name}
		if verb == "create" {
			attrs.Name = ""
		}
		got, err := ssar.SelfSubjectAccessReviews().Create(ctx, &authzv1.SelfSubjectAccessReview{Spec: authzv1.SelfSubjectAccessReviewSpec{ResourceAttributes: attrs}}, metav1.CreateOptions{})
		if err != nil {
			return "", false, fmt.Errorf("access review for %s on the Lease: %w", verb, err)
		}
		v := verb + " allowed"
		if !got.Status.Allowed {
			ok = false
			v = verb + " DENIED"
			if got.Status.Reason != "" {
				v += " (" + got.Status.Reason + ")"
			}
		}
		verdicts = append(verdicts, v)
	}
	return fmt.Sprintf("leases.v1.coordination.k8s.io %s/%s: %s", namespace, name, strings.Join(verdicts, ", ")), ok, nil
}
