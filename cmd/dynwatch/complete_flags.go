package main

import (
	"context"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	flag "github.com/spf13/pflag"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dynwatch/dynwatch/config"
)

// outputValues are each command's -o values, for completion.
var outputValues = map[string][]string{
	"tail":      {"table", "wide", "json", "yaml", "name"},
	"resources": resourceOutputs,
	"audit":     {"table", "json"},
}

// completeFor completes a command's flag values as kubectl does: -o values,
// -n namespaces from the cluster, test's --rule from its --config; else the
// command's arguments (tail: resource names). Each command parses its own
// flags, so cobra hands every word over.
func completeFor(name string) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		last := ""
		if len(args) > 0 {
			last = args[len(args)-1]
		}
		switch last {
		case "-o", "--output":
			return prefixed(outputValues[name], toComplete), cobra.ShellCompDirectiveNoFileComp
		case "-n", "--namespace":
			return prefixed(namespaces(args), toComplete), cobra.ShellCompDirectiveNoFileComp
		case "--rule":
			return prefixed(ruleNames(args), toComplete), cobra.ShellCompDirectiveNoFileComp
		}
		if name == "tail" {
			return completeResources(cmd, args, toComplete)
		}
		return nil, cobra.ShellCompDirectiveDefault
	}
}

func prefixed(list []string, prefix string) []string {
	var out []string
	for _, v := range list {
		if strings.HasPrefix(v, prefix) {
			out = append(out, v)
		}
	}
	return out
}

// completionFlags parses the words typed so far, ignoring what it does not know.
func completionFlags(args []string) (*kubeFlags, string) {
	fs := flag.NewFlagSet("complete", flag.ContinueOnError)
	fs.ParseErrorsAllowlist.UnknownFlags = true
	var kf kubeFlags
	kf.register(fs)
	cfg := fs.String("config", "", "")
	_ = fs.Parse(args)
	return &kf, *cfg
}

// namespaces lists the cluster's namespaces; none when it cannot.
func namespaces(args []string) []string {
	kf, _ := completionFlags(args)
	c, err := kf.connect()
	if err != nil {
		return nil
	}
	list, err := c.typed.CoreV1().Namespaces().List(context.Background(), metav1.ListOptions{})
	if err != nil {
		return nil
	}
	var out []string
	for _, ns := range list.Items {
		out = append(out, ns.Name)
	}
	return out
}

// ruleNames lists the rules of the --config typed so far.
func ruleNames(args []string) []string {
	_, path := completionFlags(args)
	if path == "" {
		return nil
	}
	f, _ := config.LoadWith(path, config.Options{UnsetEnvWarns: true})
	if f == nil {
		return nil
	}
	var out []string
	for _, r := range f.Config.Rules {
		if !slices.Contains(out, r.Name) {
			out = append(out, r.Name)
		}
	}
	return out
}
