package main

import (
	"context"
	"encoding/json"
	"fmt"
	"path"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/dynwatch/dynwatch/discovery"
)

func cmdResources(_ context.Context, e *env, args []string) int {
	fs := flagSet(e, "resources", "[-o table|wide|json|yaml|name] [--group G]",
		"Lists the resources the API server serves, like kubectl api-resources, with every version;\n"+
			"each group's preferred version comes first. Group/versions whose discovery failed are reported\n"+
			"on stderr and the rest are listed.")
	var kf kubeFlags
	kf.register(fs)
	lf := commandLogs(fs)
	output := fs.StringP("output", "o", "table", "output format: table, wide (adds CATEGORIES), json, yaml or name (RESOURCE.GROUP, once each, as kubectl api-resources -o name)")
	group := fs.String("group", "", "only this API group (\"core\" for the core group; glob patterns allowed)")
	if code, ok := parse(fs, args); !ok {
		return code
	}
	if code, ok := lf.apply(fs, e, &kf); !ok {
		return code
	}
	if !slices.Contains(resourceOutputs, *output) {
		return usageError(fs, "-o: want table or json (or wide, yaml, name), got %q", *output)
	}
	c, err := kf.connect()
	if err != nil {
		fmt.Fprintln(e.stderr, "dynwatch resources:", err)
		return exitFailure
	}
	cat, err := c.catalog(e.stderr)
	if err != nil {
		fmt.Fprintln(e.stderr, "dynwatch resources:", err)
		return exitFailure
	}
	list := cat.Resources
	if *group != "" {
		want := *group
		if want == "core" {
			want = ""
		}
		if _, err := path.Match(want, ""); err != nil {
			return usageError(fs, "--group: bad glob pattern %q", *group)
		}
		list = nil
		for _, r := range cat.Resources {
			if ok, _ := path.Match(want, r.Group); ok {
				list = append(list, r)
			}
		}
	}
	if *output != "table" && *output != "json" {
		return writeResources(e.stdout, list, *output)
	}
	if *output == "json" {
		if list == nil {
			list = []discovery.Resource{}
		}
		enc := json.NewEncoder(e.stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(list); err != nil {
			return exitFailure
		}
		return exitOK
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 3, ' ', 0)
	fmt.Fprintln(tw, "NAME\tSHORTNAMES\tAPIVERSION\tNAMESPACED\tKIND\tPREFERRED\tVERBS")
	for _, r := range list {
		gv := r.Version
		if r.Group != "" {
			gv = r.Group + "/" + r.Version
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%t\t%s\t%t\t%s\n", r.Resource, strings.Join(r.ShortNames, ","), gv, r.Namespaced, r.Kind, r.Preferred, strings.Join(r.Verbs, ","))
	}
	return flushErr(tw.Flush())
}

func flushErr(err error) int {
	if err != nil {
		return exitFailure
	}
	return exitOK
}
