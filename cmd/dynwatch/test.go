package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/tidwall/gjson"
	"sigs.k8s.io/yaml"

	"github.com/dynwatch/dynwatch/event"
	"github.com/dynwatch/dynwatch/rules"
)

func cmdTest(_ context.Context, e *env, args []string) int {
	fs := flagSet(e, "test", "--config FILE --rule NAME [--old FILE] --new FILE [--explain]",
		"Evaluates one rule offline on object files (JSON or YAML): an add of --new, or with --old an update\n"+
			"from --old to --new. Prints whether the rule fires and the payload it would produce; --explain\n"+
			"prints each check with the value found and whether it held. Exits 0 when the rule fires, 1 when\n"+
			"it does not, 2 on bad usage or an invalid config.")
	var kf kubeFlags
	kf.registerOffline(fs)
	config := fs.String("config", "", "the config file (required)")
	ruleName := fs.String("rule", "", "the rule to evaluate (required)")
	oldFile := fs.String("old", "", "the object before the change (makes the event an update)")
	newFile := fs.String("new", "", "the object (after the change) (required)")
	explain := fs.Bool("explain", false, "print each check with the value found and whether it held")
	if code, ok := parse(fs, args); !ok {
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
	obj, err := readObject(*newFile)
	if err != nil {
		return usageErr("--new: %v", err)
	}
	typ, old := event.Add, []byte(nil)
	if *oldFile != "" {
		if old, err = readObject(*oldFile); err != nil {
			return usageErr("--old: %v", err)
		}
		typ = event.Update
	}
	ev := event.New(typ, resourceOf(obj, rule), obj, old, time.Now())

	fires, steps := rule.Explain(ev, nil, file.Redactor)
	if *explain {
		for _, s := range steps {
			verdict := "holds"
			if !s.Held {
				verdict = "does NOT hold"
			}
			fmt.Fprintf(e.stdout, "%-50s found %s: %s\n", s.Check, s.Found, verdict)
		}
	}
	if !fires {
		fmt.Fprintf(e.stdout, "rule %s does not fire on this %s\n", rule.Name, ev.Type)
		return exitFailure
	}
	fmt.Fprintf(e.stdout, "rule %s fires on this %s; payload:\n", rule.Name, ev.Type)
	enc := json.NewEncoder(e.stdout)
	enc.SetEscapeHTML(false) // "<redacted>" reads as written
	enc.SetIndent("", "  ")
	_, transition := rule.Decide(ev, nil)
	if err := enc.Encode(rule.Payload(file.Prepare(ev), transition)); err != nil {
		return exitFailure
	}
	return exitOK
}

// readObject reads a JSON or YAML object file as JSON.
func readObject(path string) ([]byte, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	b, err := yaml.YAMLToJSON(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if !bytes.HasPrefix(bytes.TrimSpace(b), []byte("{")) {
		return nil, fmt.Errorf("%s: want one object (a mapping), not a list or a value", path)
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, b); err != nil {
		return nil, err
	}
	return compact.Bytes(), nil
}

// resourceOf names the object's resource offline: group and version from its
// apiVersion, kind from its kind, and the plural from the rule's selector when
// it names one exactly (discovery would be needed otherwise).
func resourceOf(obj []byte, r *rules.Rule) event.Resource {
	res := event.Resource{Kind: gjson.GetBytes(obj, "kind").Str, Namespaced: gjson.GetBytes(obj, "metadata.namespace").Str != ""}
	av := gjson.GetBytes(obj, "apiVersion").Str
	if g, v, ok := strings.Cut(av, "/"); ok {
		res.Group, res.Version = g, v
	} else {
		res.Version = av
	}
	for _, s := range r.Selectors {
		if s.Resource != "" && !strings.ContainsAny(s.Resource, "*?[") {
			res.Resource = s.Resource
			break
		}
	}
	return res
}
