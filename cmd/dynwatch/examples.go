package main

import (
	"strings"

	"github.com/spf13/cobra"
)

// examples are the Examples section of each command's --help, as cobra's
// Example field holds them: command lines that work as written (a test runs
// each with --help appended, so that every flag they use exists). A line
// that starts with "dynwatch" is shown with the name dynwatch goes by
// (progName: "kubectl dynwatch" as the plugin).
var examples = map[string]string{
	"dynwatch": `  # is the config valid, and may dynwatch list and watch what its rules select?
  dynwatch check --cluster config.yaml
  # list the Deployments of every namespace, then follow each change
  dynwatch tail deployments -A
  # watch the cluster and deliver events as the config says
  dynwatch run --config config.yaml`,
	"run": `  # watch the cluster of the kubeconfig's current context, as the config says
  dynwatch run --config config.yaml
  # another kubeconfig and context, debug logs as JSON
  dynwatch run --config config.yaml --kubeconfig ~/.kube/staging --context staging --log-level debug --log-format json
  # refuse a config that sends a credential in clear or skips certificate checks
  dynwatch run --config config.yaml --strict`,
	"check": `  # validate a config file offline
  dynwatch check config.yaml
  # also resolve its selectors through discovery and check list and watch permission
  dynwatch check --cluster config.yaml
  # in CI: an unset ${VAR} or a credential sent in clear is an error, not a warning
  dynwatch check --strict --strict-env --config config.yaml`,
	"resources": `  # what the API server serves, like kubectl api-resources
  dynwatch resources
  # one group, with categories
  dynwatch resources --group apps -o wide
  # the names tail and rules take, for a script
  dynwatch resources -o name`,
	"rbac": `  # the Role or ClusterRole and binding the config needs, for the ServiceAccount monitoring/dynwatch
  dynwatch rbac --config config.yaml --service-account monitoring/dynwatch | kubectl apply -f -
  # with glob selectors resolved through the cluster's discovery
  dynwatch rbac --config config.yaml --cluster`,
	"tail": `  # Deployments in every namespace
  dynwatch tail deployments -A
  # ConfigMaps and Secrets of one namespace, with a label selector
  dynwatch tail cm,secrets -n prod -l app=web
  # Deployments with more than 3 replicas, with a column for them
  dynwatch tail deploy -A --where 'spec.replicas > 3' --columns replicas=spec.replicas
  # one object, each event as its JSON payload
  dynwatch tail deployment/web -n prod -o json
  # the Deployments that are not healthy (kstatus' Current), with their health
  dynwatch tail deploy -A --health --columns health=health.status,why=health.message`,
	"audit": `  # the objects that match the rules now, as a table
  dynwatch audit --config config.yaml
  # one payload per line, for jq; exit 1 when something matched, 3 when the audit is incomplete
  dynwatch audit --config config.yaml -o json | jq -r .name
  # only the matches whose objects are failing or still rolling out
  dynwatch audit --config config.yaml --health Failed,InProgress`,
	"test": `  # does rule scaled-up fire when web-old.yaml becomes web-new.yaml? each check explained
  dynwatch test --config config.yaml --rule scaled-up --old web-old.yaml --new web-new.yaml --explain
  # what each of the rule's actions would send for an object added (body, headers, key)
  dynwatch test --config config.yaml --rule scaled-up --new web-new.yaml --render`,
	"version": `  dynwatch version`,
	"help":    `  dynwatch help tail`,
	"completion": `  # bash, for this shell
  source <(dynwatch completion bash)`,
	"completion bash": `  # this shell
  source <(dynwatch completion bash)
  # every new shell
  dynwatch completion bash > /etc/bash_completion.d/dynwatch`,
	"completion zsh":        `  dynwatch completion zsh > "${fpath[1]}/_dynwatch"`,
	"completion fish":       `  dynwatch completion fish | source`,
	"completion powershell": `  dynwatch completion powershell | Out-String | Invoke-Expression`,
}

// exampleOf returns the Examples section of the command at path ("tail",
// "completion bash"), with the name dynwatch goes by.
func exampleOf(path string) string {
	r := strings.NewReplacer("  dynwatch ", "  "+progName+" ", "<(dynwatch ", "<("+progName+" ")
	return r.Replace(examples[path])
}

// setExamples gives cobra's own commands (completion and its shells, help)
// and the root their Examples.
func setExamples(root *cobra.Command) {
	root.Example = exampleOf("dynwatch")
	root.InitDefaultCompletionCmd()
	for _, c := range root.Commands() {
		if c.Example == "" {
			c.Example = exampleOf(c.Name())
		}
		for _, sub := range c.Commands() {
			sub.Example = exampleOf(c.Name() + " " + sub.Name())
		}
	}
}
