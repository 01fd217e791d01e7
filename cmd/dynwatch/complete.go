package main

import (
	"slices"
	"strings"

	"github.com/spf13/cobra"
	flag "github.com/spf13/pflag"
)

// completeResources completes tail's RESOURCE[,RESOURCE…] from discovery: the
// names kubectl accepts (plural, short names, plural.group), after the last
// comma of what is typed so far.
func completeResources(_ *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	fs := flag.NewFlagSet("complete", flag.ContinueOnError)
	fs.ParseErrorsAllowlist.UnknownFlags = true
	var kf kubeFlags
	kf.register(fs)
	_ = fs.Parse(args)
	if len(fs.Args()) > 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp // the resources are given already
	}
	c, err := kf.connect()
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	cat, err := c.catalog(nopWriter{})
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	done, cur := "", toComplete
	if i := strings.LastIndex(toComplete, ","); i >= 0 {
		done, cur = toComplete[:i+1], toComplete[i+1:]
	}
	var out []string
	for _, r := range cat.Resources {
		if !r.Preferred || !r.Watchable() {
			continue
		}
		for _, n := range append([]string{r.Resource, r.Name()}, r.ShortNames...) {
			if strings.HasPrefix(n, cur) && !slices.Contains(out, done+n) {
				out = append(out, done+n)
			}
		}
	}
	return out, cobra.ShellCompDirectiveNoFileComp | cobra.ShellCompDirectiveNoSpace
}

type nopWriter struct{}

func (nopWriter) Write(p []byte) (int, error) { return len(p), nil }
