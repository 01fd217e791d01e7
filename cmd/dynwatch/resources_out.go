package main

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	sigsyaml "sigs.k8s.io/yaml"

	"github.com/dynwatch/dynwatch/discovery"
)

// resourceOutputs are the -o values of dynwatch resources.
var resourceOutputs = []string{"table", "wide", "json", "yaml", "name"}

// writeResources writes list as -o wide, yaml or name, as kubectl
// api-resources does: wide adds the categories, name is RESOURCE.GROUP once
// per resource (not per version).
func writeResources(w io.Writer, list []discovery.Resource, output string) int {
	switch output {
	case "yaml":
		if list == nil {
			list = []discovery.Resource{}
		}
		b, err := json.Marshal(list)
		if err == nil {
			b, err = sigsyaml.JSONToYAML(b)
		}
		if err != nil {
			return exitFailure
		}
		_, err = w.Write(b)
		return flushErr(err)
	case "name":
		var seen []string
		for _, r := range list {
			if n := r.Name(); !slices.Contains(seen, n) {
				seen = append(seen, n)
				fmt.Fprintln(w, n)
			}
		}
		return exitOK
	}
	tw := tabwriter.NewWriter(w, 0, 4, 3, ' ', 0)
	fmt.Fprintln(tw, "NAME\tSHORTNAMES\tAPIVERSION\tNAMESPACED\tKIND\tPREFERRED\tVERBS\tCATEGORIES")
	for _, r := range list {
		gv := r.Version
		if r.Group != "" {
			gv = r.Group + "/" + r.Version
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%t\t%s\t%t\t%s\t%s\n", r.Resource, strings.Join(r.ShortNames, ","), gv, r.Namespaced, r.Kind, r.Preferred,
			strings.Join(r.Verbs, ","), strings.Join(r.Categories, ","))
	}
	return flushErr(tw.Flush())
}
