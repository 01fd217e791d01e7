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

	"github.com/dynwatch/dynwatch/discovery"
	"github.com/dynwatch/dynwatch/event"
	"github.com/dynwatch/dynwatch/payload"
	"github.com/dynwatch/dynwatch/plan"
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
	lf := commandLogs(fs)
	config := fs.String("config", "", "the config file (required)")
	ruleName := fs.String("rule", "", "the rule to evaluate (required)")
	oldFile := fs.String("old", "", "the object before the change (makes the event an update)")
	newFile := fs.String("new", "", "the object (after the change) (required)")
	explain := fs.Bool("explain", false, "print each check with the value found and whether it held")
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
	objs, err := readObjects(*newFile)
	if err != nil {
		return usageErr("--new: %v", err)
	}
	var olds [][]byte
	if *oldFile != "" {
		if olds, err = readObjects(*oldFile); err != nil {
			return usageErr("--old: %v", err)
		}
		if len(olds) != len(objs) {
			return usageErr("--old holds %d objects and --new %d: they pair up in order", len(olds), len(objs))
		}
	}
	code = exitOK
	for i, obj := range objs {
		typ, old := event.Add, []byte(nil)
		if olds != nil {
			typ, old = event.Update, olds[i]
		}
		if len(objs) > 1 {
			fmt.Fprintf(e.stdout, "--- object %d of %d: %s %s\n", i+1, len(objs), gjson.GetBytes(obj, "kind").Str, gjson.GetBytes(obj, "metadata.name").Str)
		}
		if !testOne(e, file, rule, event.New(typ, resourceOf(obj, rule), obj, old, time.Now()), *explain) {
			code = exitFailure
		}
	}
	return code
}

// testOne evaluates the rule on one event as run would, prints the verdict
// (and with explain each check), and the payload when it fires.
func testOne(e *env, file *plan.File, rule *rules.Rule, ev *event.Event, explain bool) bool {
	selected := rule.SelectsObject(ev.Resource)
	fires, steps := rule.Explain(ev, nil, file.Redactor)
	if explain {
		steps = append([]rules.Step{{Check: "resources", Found: fmt.Sprintf("%s (group %q, version %s)", ev.Resource.Kind, ev.Resource.Group, ev.Resource.Version), Held: selected}}, steps...)
		for _, s := range steps {
			verdict := "holds"
			if !s.Held {
				verdict = "does NOT hold"
			}
			// One terminal line per step, whatever the values hold.
			fmt.Fprintf(e.stdout, "%-50s found %s: %s\n", payload.Printable(s.Check), payload.Printable(s.Found), verdict)
		}
	}
	if !selected {
		fmt.Fprintf(e.stdout, "rule %s does not select %s objects (group %q): it does not fire\n", rule.Name, ev.Resource.Kind, ev.Resource.Group)
		return false
	}
	if !fires {
		fmt.Fprintf(e.stdout, "rule %s does not fire on this %s\n", rule.Name, ev.Type)
		return false
	}
	fmt.Fprintf(e.stdout, "rule %s fires on this %s; payload:\n", rule.Name, ev.Type)
	enc := json.NewEncoder(e.stdout)
	enc.SetEscapeHTML(false) // "<redacted>" reads as written
	enc.SetIndent("", "  ")
	_, transition := rule.Decide(ev, nil)
	return enc.Encode(rule.Payload(file.Prepare(ev), transition)) == nil
}

// readObjects reads the objects of a JSON or YAML file: each document of a
// multi-document file, and each item of a kind: List, as compact JSON.
func readObjects(path string) ([][]byte, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var out [][]byte
	for _, doc := range splitDocuments(data) {
		b, err := yaml.YAMLToJSON(doc)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if t := bytes.TrimSpace(b); len(t) == 0 || string(t) == "null" {
			continue
		}
		if !bytes.HasPrefix(bytes.TrimSpace(b), []byte("{")) {
			return nil, fmt.Errorf("%s: want objects (mappings), not a list or a value", path)
		}
		if items := gjson.GetBytes(b, "items"); strings.HasSuffix(gjson.GetBytes(b, "kind").Str, "List") && items.IsArray() {
			kind, apiVersion := strings.TrimSuffix(gjson.GetBytes(b, "kind").Str, "List"), gjson.GetBytes(b, "apiVersion").Str
			items.ForEach(func(_, it gjson.Result) bool {
				out = append(out, cutManagedFields(compact(withKind([]byte(it.Raw), kind, apiVersion))))
				return true
			})
			continue
		}
		out = append(out, cutManagedFields(compact(b)))
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: holds no object", path)
	}
	return out, nil
}

// withKind gives an item of a list the list's kind (without "List") and
// apiVersion when it has none, as the API server's lists of built-in types
// leave them out of their items and run's informers put them back: a
// SecretList's items are Secrets, redacted as Secrets are.
func withKind(item []byte, kind, apiVersion string) []byte {
	if kind == "" || gjson.GetBytes(item, "kind").Exists() || !bytes.HasPrefix(item, []byte("{")) {
		return item
	}
	add := map[string]string{"kind": kind}
	if !gjson.GetBytes(item, "apiVersion").Exists() {
		add["apiVersion"] = apiVersion
	}
	head, _ := json.Marshal(add)
	rest := bytes.TrimSpace(item[1:])
	if !bytes.HasPrefix(rest, []byte("}")) {
		head = append(head[:len(head)-1], ',')
	} else {
		head = head[:len(head)-1]
	}
	return append(head, rest...)
}

// splitDocuments splits a YAML stream at its "---" lines.
func splitDocuments(data []byte) [][]byte {
	var docs [][]byte
	var cur []byte
	for _, line := range bytes.SplitAfter(data, []byte("\n")) {
		if t := bytes.TrimRight(line, " \t\r\n"); string(t) == "---" || bytes.HasPrefix(t, []byte("--- ")) {
			docs = append(docs, cur)
			cur = nil
			continue
		}
		cur = append(cur, line...)
	}
	return append(docs, cur)
}

// cutManagedFields drops metadata.managedFields, as run's informers do, so
// that rules and payloads see the object as run would. Its other values are
// kept byte for byte (the top level's and metadata's keys come out sorted).
func cutManagedFields(obj []byte) []byte {
	if !gjson.GetBytes(obj, "metadata.managedFields").Exists() {
		return obj
	}
	var doc, md map[string]json.RawMessage
	if json.Unmarshal(obj, &doc) != nil || json.Unmarshal(doc["metadata"], &md) != nil {
		return obj
	}
	delete(md, "managedFields")
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if enc.Encode(md) != nil {
		return obj
	}
	doc["metadata"] = bytes.TrimSpace(bytes.Clone(buf.Bytes()))
	buf.Reset()
	if enc.Encode(doc) != nil {
		return obj
	}
	return bytes.TrimSpace(buf.Bytes())
}

func compact(b []byte) []byte {
	var buf bytes.Buffer
	if json.Compact(&buf, b) != nil {
		return b
	}
	return buf.Bytes()
}

// clusterScoped are the built-in kinds without a namespace; any other kind is
// taken to be namespaced, as most are.
var clusterScoped = map[string]bool{"Namespace": true, "Node": true, "PersistentVolume": true, "ClusterRole": true,
	"ClusterRoleBinding": true, "CustomResourceDefinition": true, "StorageClass": true, "PriorityClass": true,
	"APIService": true, "MutatingWebhookConfiguration": true, "ValidatingWebhookConfiguration": true,
	"ValidatingAdmissionPolicy": true, "ValidatingAdmissionPolicyBinding": true, "IngressClass": true,
	"RuntimeClass": true, "CSIDriver": true, "CSINode": true, "VolumeAttachment": true, "CertificateSigningRequest": true}

// resourceOf names the object's resource offline: group and version from its
// apiVersion, kind from its kind, the plural from the rule's selector when it
// names one exactly (else guessed from the kind), and whether it is namespaced
// (built-in cluster-scoped kinds are known; any other kind is namespaced).
func resourceOf(obj []byte, r *rules.Rule) event.Resource {
	kind := gjson.GetBytes(obj, "kind").Str
	res := event.Resource{Kind: kind, Namespaced: gjson.GetBytes(obj, "metadata.namespace").Str != "" || !clusterScoped[kind]}
	av := gjson.GetBytes(obj, "apiVersion").Str
	if g, v, ok := strings.Cut(av, "/"); ok {
		res.Group, res.Version = g, v
	} else {
		res.Version = av
	}
	res.Resource = discovery.Plural(kind)
	for _, s := range r.Selectors {
		if s.Resource != "" && !strings.ContainsAny(s.Resource, "*?[") && s.MatchesObject(res.Group, res.Version, kind) {
			res.Resource = s.Resource
			break
		}
	}
	return res
}
