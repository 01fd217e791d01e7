package main

import (
	"context"
	"strings"

	"github.com/dynwatch/dynwatch/action"
	"github.com/dynwatch/dynwatch/offline"
)

func cmdTest(_ context.Context, e *env, args []string) int {
	fs := flagSet(e, "test", "--config FILE --rule NAME [--old FILE] --new FILE [--explain] [--render]",
		"Evaluates one rule offline on object files (JSON or YAML): an add of --new, or with --old an update\n"+
			"from --old to --new, as run sees it: with different uids, a delete of --old and then an add of --new;\n"+
			"the same object at one resourceVersion, a resync, which fires nothing. Prints whether the rule fires and\n"+
			"the payload it would produce; --explain prints each check with the value found and whether it held,\n"+
			"and the group each action would put the event in. --render prints, per action, what its sender would\n"+
			"send: the webhook request (its body after the template or format: Slack or Teams message, CloudEvent\n"+
			"in structured or binary mode) and headers, the Kafka record (topic, key, headers, value), the NATS\n"+
			"message (subject, headers, data), the log line, the command's stdin and variables; nothing is sent,\n"+
			"and the config's ${VAR} values and credential headers are masked. A grouping action's is shown as a\n"+
			"group of one; a CloudEvent's source reads \"dynwatch\" (run uses the API server's URL).\n"+
			"Exits 0 when the rule fires, 1 when it does not,\n"+
			"2 on bad usage or an invalid config.")
	var kf kubeFlags
	kf.registerOffline(fs)
	lf := commandLogs(fs)
	config := fs.String("config", "", "the config file (required)")
	ruleName := fs.String("rule", "", "the rule to evaluate (required)")
	oldFile := fs.String("old", "", "the object before the change (makes the event an update)")
	newFile := fs.String("new", "", "the object (after the change) (required)")
	explain := fs.Bool("explain", false, "print each check with the value found and whether it held")
	render := fs.Bool("render", false, "print what each of the rule's actions would send: the body, headers and key, as its sender renders them (secrets masked)")
	if code, ok := parse(fs, args); !ok {
		return code
	}
	if code, ok := lf.apply(fs, e, &kf); !ok {
		return code
	}
	usageErr := func(format string, a ...any) int {
		return usageError(fs, format, a...)
	}
	if *config == "" || *ruleName == "" || *newFile == "" || fs.NArg() > 0 {
		return usageError(fs, "--config, --rule and --new are required and no arguments are taken")
	}
	file, code := loadConfig(e.stderr, *config)
	if file == nil {
		return code
	}
	rule := file.Rule(*ruleName)
	if rule == nil {
		var names []string
		for _, r := range file.Rules {
			names = append(names, r.Name)
		}
		return usageErr("no rule %q in %s (it has: %s)", *ruleName, *config, strings.Join(names, ", "))
	}
	objs, managed, err := offline.ReadObjectsManaged(*newFile)
	if err != nil {
		return usageErr("--new: %v", err)
	}
	var olds, oldManaged [][]byte
	if *oldFile != "" {
		if olds, oldManaged, err = offline.ReadObjectsManaged(*oldFile); err != nil {
			return usageErr("--old: %v", err)
		}
		if len(olds) != len(objs) {
			return usageErr("--old holds %d objects and --new %d: they pair up in order", len(olds), len(objs))
		}
		if err := offline.PairProblem(olds, objs); err != nil {
			return usageErr("%v", err)
		}
	}
	t := offline.Test{Rule: rule, Redactor: file.Redactor, Deriver: file.Health, New: objs, Old: olds,
		NewManaged: managed, OldManaged: oldManaged, Explain: *explain, Render: *render,
		Env: action.Env{Secrets: file.Secrets()}}
	for _, name := range rule.Actions {
		t.Actions = append(t.Actions, file.Action(name))
		t.Senders = append(t.Senders, file.CompiledAction(name))
	}
	if !t.Run(e.stdout) {
		return exitFailure
	}
	return exitOK
}
