package audit

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dynwatch/dynwatch/discovery"
	"github.com/dynwatch/dynwatch/dyninformer"
	"github.com/dynwatch/dynwatch/event"
	"github.com/dynwatch/dynwatch/payload"
	"github.com/dynwatch/dynwatch/plan"
	"github.com/dynwatch/dynwatch/rules"
)

// TypeAudit is the type of an audit finding's payload: not a change, a state.
const TypeAudit event.Type = "audit"

// Finding is one object that satisfies one rule.
type Finding struct {
	Rule    *rules.Rule
	Payload *event.Payload
}

// Options configure an audit.
type Options struct {
	File    *plan.File
	Catalog *discovery.Catalog
	// Client lists the objects, as the JSON bytes the API server sent.
	Client *dyninformer.Client
	// PageSize is the LIST limit; large clusters are read a page at a time.
	// Default: 500.
	PageSize int64
	// Progress, when set, receives a progress line per page (for a terminal).
	Progress io.Writer
	Now      func() time.Time
	// Cluster names the cluster Client and Catalog reach, with clusters: in
	// each finding's payload and in the keys of Listed and Failed. Default:
	// "", the one cluster.
	Cluster string
	// Health, when set, keeps only the findings whose object's health is
	// one of these statuses (audit --health Failed,InProgress). Default:
	// every finding.
	Health []string
}

// Result is what an audit found, and the resources it could not list.
type Result struct {
	Findings []Finding
	// Listed counts objects listed per resource.
	Listed map[string]int
	// Failed maps a resource to why it could not be listed.
	Failed map[string]error
}

// Run lists each watched resource (and namespace scope) once, however many
// rules select it, and evaluates the rules of that resource on every object.
func Run(ctx context.Context, o Options) (*Result, error) {
	if o.PageSize <= 0 {
		o.PageSize = 500
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	pl := plan.Resolve(o.File, o.Catalog)
	res := &Result{Listed: map[string]int{}, Failed: map[string]error{}}
	for _, w := range pl.Watches {
		key := w.Resource.String()
		if w.Namespace != "" {
			key += " in namespace " + w.Namespace
		}
		if o.Cluster != "" {
			key += " in cluster " + o.Cluster
		}
		gvr := w.Key().GVR
		eval := &rules.Evaluator{Redactor: o.File.Redactor, State: true, Deriver: o.File.Health}
		cont := ""
		for {
			list, err := o.Client.List(ctx, gvr, w.Namespace, metav1.ListOptions{Limit: o.PageSize, Continue: cont})
			if err != nil {
				res.Failed[key] = err
				break
			}
			for _, item := range list.Items {
				obj, ok := item.(*dyninformer.Object)
				if !ok {
					continue
				}
				ev := event.New(TypeAudit, w.Resource, obj.JSON(), nil, o.Now())
				ev.Cluster = o.Cluster
				for _, m := range eval.Evaluate(pl.Index[gvr], ev) {
					// Audit reports the state of what exists: each finding
					// says its object's health, whatever its rule reads.
					if m.Payload.Health == nil {
						m.Payload.Health = o.File.Redactor.Health(ev, false)
					}
					if o.Health != nil && (m.Payload.Health == nil || !slices.Contains(o.Health, m.Payload.Health.Status)) {
						continue
					}
					res.Findings = append(res.Findings, Finding{Rule: m.Rule, Payload: m.Payload})
				}
			}
			res.Listed[key] += len(list.Items)
			if o.Progress != nil {
				fmt.Fprintf(o.Progress, "\r\033[Klisting %s: %d objects", key, res.Listed[key])
			}
			cont = list.Continue
			if cont == "" {
				break
			}
		}
	}
	if o.Progress != nil {
		fmt.Fprint(o.Progress, "\r\033[K")
	}
	slices.SortStableFunc(res.Findings, func(a, b Finding) int {
		return strings.Compare(a.Payload.Rule+"\x00"+a.Payload.Namespace+"\x00"+a.Payload.Name, b.Payload.Rule+"\x00"+b.Payload.Namespace+"\x00"+b.Payload.Name)
	})
	return res, ctx.Err()
}

// WriteTable writes the findings as a table: RULE, RESOURCE, NAMESPACE, NAME,
// HEALTH (the object's status; its message is in -o json) and the rule's fields as name=value pairs, their JSON fit for a terminal
// (payload.Printable); with clusters, CLUSTER first.
func WriteTable(w io.Writer, fs []Finding) error {
	tw := tabwriter.NewWriter(w, 0, 4, 3, ' ', 0)
	clusters := slices.ContainsFunc(fs, func(f Finding) bool { return f.Payload.Cluster != "" })
	if clusters {
		fmt.Fprint(tw, "CLUSTER\t")
	}
	fmt.Fprintln(tw, "RULE\tRESOURCE\tNAMESPACE\tNAME\tHEALTH\tFIELDS")
	for _, f := range fs {
		p := f.Payload
		ns := p.Namespace
		if ns == "" {
			ns = "-"
		}
		res := p.Resource.Name()
		var fields []string
		for _, name := range f.Rule.FieldNames() {
			fields = append(fields, name+"="+payload.Printable(string(p.Fields[name])))
		}
		if clusters {
			fmt.Fprintf(tw, "%s\t", p.Cluster)
		}
		status := "-"
		if p.Health != nil {
			status = payload.Printable(p.Health.Status)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", p.Rule, res, ns, p.Name, status, strings.Join(fields, " "))
	}
	return tw.Flush()
}

// WriteJSON writes one payload per finding and line.
func WriteJSON(w io.Writer, fs []Finding) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	for _, f := range fs {
		if err := enc.Encode(f.Payload); err != nil {
			return err
		}
	}
	return nil
}
